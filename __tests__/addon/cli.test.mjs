// Covers: bin/c2c-bridge.js run as a subprocess — every command in text and --json mode,
// exit codes (0 ok, 1 failed, 2 usage), identity for send/inbox (from the registration of
// --session-id / C2C_MCP_SESSION_ID, never from an alias argument). threats.md families:
// Identity (acting as someone else), Prompt injection (peer text reaching a terminal:
// control characters must be escaped), Storage (doctor's checks).
import { describe, expect, test } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { addon, deadPid, REPO_DIR, RUNTIME, sid, useBrokerFixtures, waitExit } from '../helpers/broker.mjs';

const fx = useBrokerFixtures();
const BIN = path.join(REPO_DIR, 'bin', 'c2c-bridge.js');

/** Run the CLI with a clean c2c environment plus `env`. */
function cli(args, env = {}) {
  const base = { ...process.env };
  delete base.C2C_MCP_SESSION_ID;
  delete base.C2C_MCP_BROKER_ROOT;
  const r = spawnSync(RUNTIME, [BIN, ...args], { env: { ...base, ...env }, encoding: 'utf8', timeout: 20000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}
const json = (r) => JSON.parse(r.stdout);
// Any C0 control but \n, DEL, C1, bidi controls: nothing a terminal could act on.
// eslint-disable-next-line no-control-regex
const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

function setup() {
  const root = fx.root();
  const a = fx.open({ root, sessionId: sid('a'), alias: 'alice' });
  const b = fx.open({ root, sessionId: sid('b'), alias: 'bob' });
  return { root, a, b };
}

describe('usage and exit codes', () => {
  test('--help documents commands and exit codes (exit 0)', () => {
    const r = cli(['--help']);
    expect(r.code).toBe(0);
    for (const word of ['peers', 'send', 'inbox', 'rooms', 'log', 'doctor', 'sweep', '--json', '--root', '--session-id', 'C2C_MCP_SESSION_ID', 'Exit codes']) {
      expect(r.stdout).toContain(word);
    }
    expect(r.stdout).toMatch(/0\s+success/);
    expect(r.stdout).toMatch(/1\s+the operation failed/);
    expect(r.stdout).toMatch(/2\s+usage error/);
  });

  test('--version prints the package and native versions', () => {
    const r = cli(['--version', '--json']);
    expect(r.code).toBe(0);
    expect(json(r)).toEqual({ version: JSON.parse(fs.readFileSync(path.join(REPO_DIR, 'package.json'), 'utf8')).version, native: addon.nativeVersion() });
  });

  test.each([
    [[], 'no command'],
    [['frobnicate'], 'unknown command'],
    [['peers', '--bogus'], 'unknown option'],
    [['send', 'bob'], 'missing text'],
    [['peers', 'extra'], 'extra argument'],
    [['log', '--limit', 'abc'], 'bad --limit'],
    [['log', '--limit', '0'], 'zero --limit'],
    [['peers', '--peek'], 'option of another command'],
  ])('usage error exits 2: %j (%s)', (args) => {
    const root = fx.root();
    const r = cli(['--root', root, ...args]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/E_USAGE/);
    const j = cli(['--root', root, '--json', ...args]);
    expect(j.code).toBe(2);
    expect(json(j).error.code).toBe('E_USAGE');
    expect(typeof json(j).error.message).toBe('string');
  });

  test('send and inbox without a session are usage errors (exit 2) that say how to give one', () => {
    const { root, b } = setup();
    for (const args of [['send', 'bob', 'hi'], ['inbox'], ['inbox', '--peek']]) {
      const r = cli(['--root', root, ...args]);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/E_NO_SESSION/);
      expect(r.stderr).toMatch(/--session-id/);
      expect(r.stderr).toMatch(/C2C_MCP_SESSION_ID/);
      const j = cli(['--root', root, '--json', ...args]);
      expect(j.code).toBe(2);
      expect(json(j)).toEqual({ error: { code: 'E_NO_SESSION', message: expect.stringMatching(/C2C_MCP_SESSION_ID/) } });
    }
    expect(b.peek()).toEqual([]);
  });
});

describe('peers', () => {
  test('text and --json list registrations with liveness', async () => {
    const { root, a, b } = setup();
    fx.open({ root, sessionId: sid('g'), alias: 'ghost', pid: await deadPid() });
    const r = cli(['--root', root, 'peers']);
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines.find((l) => l.includes('alice'))).toMatch(/^alive/);
    expect(lines.find((l) => l.includes('ghost'))).toMatch(/^dead/);
    expect(r.stdout).toContain(b.sessionId);
    const j = cli(['--root', root, '--json', 'peers']);
    expect(j.code).toBe(0);
    const peers = json(j);
    expect(peers.map((p) => [p.alias, p.alive]).sort()).toEqual([['alice', true], ['bob', true], ['ghost', false]]);
    expect(peers.find((p) => p.alias === 'alice').sessionId).toBe(a.sessionId);
  });

  test('honours C2C_MCP_BROKER_ROOT; a missing root from the environment is an empty list naming it, not created', () => {
    const { root } = setup();
    const r = cli(['--json', 'peers'], { C2C_MCP_BROKER_ROOT: root });
    expect(json(r).map((p) => p.alias).sort()).toEqual(['alice', 'bob']);
    const missing = path.join(fx.root(), 'absent');
    const m = cli(['peers'], { C2C_MCP_BROKER_ROOT: missing });
    expect(m.code).toBe(0);
    expect(m.stdout).toContain(`the broker root ${missing} does not exist yet`);
    expect(m.stdout).toContain('C2C_MCP_BROKER_ROOT');
    expect(fs.existsSync(missing)).toBe(false);
  });

  // Issue 18: a --root typo must not read as "no registrations" with exit 0.
  test.each(['peers', 'doctor', 'log', 'rooms', 'sweep'])('--root naming a missing directory: %s says so, exits 1, creates nothing', (command) => {
    const missing = path.join(fx.root(), 'typo');
    const t = cli(['--root', missing, command]);
    expect(t.code).toBe(1);
    expect(t.stderr).toContain(`E_NO_ROOT: --root ${missing}: no such directory`);
    const j = cli(['--root', missing, '--json', command]);
    expect([j.code, json(j).error.code]).toEqual([1, 'E_NO_ROOT']);
    expect(fs.existsSync(missing)).toBe(false);
  });

  test('aliases with terminal escapes (written by another tool) are escaped', () => {
    const root = fx.root();
    const evil = 'ev\u001b]0;pwned\u0007il\u001b[2J\r\u009b31m\u202e';
    fs.writeFileSync(path.join(root, 'registry.json'), JSON.stringify([{ session_id: 'x1', alias: evil, registered_at: 1 }]), { mode: 0o600 });
    const r = cli(['--root', root, 'peers']);
    expect(r.code).toBe(0);
    expect(r.stdout).not.toMatch(RAW_CONTROL);
    expect(r.stdout).toContain('ev\\e]0;pwned\\x07il\\e[2J\\r\\x9b31m\\u202e');
    const j = cli(['--root', root, '--json', 'peers']);
    expect(j.stdout).not.toMatch(RAW_CONTROL);
    expect(json(j)[0].alias).toBe(evil);
  });
});

describe('send', () => {
  test('acts as --session-id: the alias comes from its registration (text and --json)', () => {
    const { root, a, b } = setup();
    const r = cli(['--root', root, '--session-id', a.sessionId, 'send', 'bob', 'hello', 'from', 'cli']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^queued [0-9a-f-]{36} from alice to bob$/m);
    const j = cli(['--root', root, '--json', '--session-id', a.sessionId, 'send', 'BOB', 'second']);
    expect(j.code).toBe(0);
    const receipt = json(j);
    expect(receipt).toMatchObject({ toAlias: 'bob', toSessionId: b.sessionId, status: 'queued' });
    const inbox = b.peek();
    expect(inbox.map((m) => [m.fromAlias, m.fromSessionId, m.content])).toEqual([
      ['alice', a.sessionId, 'hello from cli'],
      ['alice', a.sessionId, 'second'],
    ]);
    expect(inbox[1].messageId).toBe(receipt.messageId);
    // the CLI attached, it did not register: the registry is unchanged
    expect(addon.listRegistrations(root).map((p) => p.alias).sort()).toEqual(['alice', 'bob']);
  });

  test('takes the session from C2C_MCP_SESSION_ID', () => {
    const { root, a, b } = setup();
    const r = cli(['--root', root, 'send', 'bob', 'via env'], { C2C_MCP_SESSION_ID: a.sessionId });
    expect(r.code).toBe(0);
    expect(b.peek()[0]).toMatchObject({ fromAlias: 'alice', content: 'via env' });
  });

  test('--alias is a check, never an identity: a mismatch fails (exit 1) and sends nothing', () => {
    const { root, a, b } = setup();
    const r = cli(['--root', root, '--session-id', a.sessionId, '--alias', 'bob', 'send', 'bob', 'spoof']);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/E_ALIAS_MISMATCH/);
    const ok = cli(['--root', root, '--session-id', a.sessionId, '--alias', 'ALICE', 'send', 'bob', 'fine']);
    expect(ok.code).toBe(0);
    expect(b.peek().map((m) => m.content)).toEqual(['fine']);
  });

  // Issue 18: errors speak the CLI's language and name the root searched.
  test('an unknown recipient names the root and points at `c2c-bridge peers`, not a JS API', () => {
    const { root, a } = setup();
    const r = cli(['--root', root, '--session-id', a.sessionId, 'send', 'nobody', 'x']);
    expect(r.code).toBe(1);
    expect(r.stderr).toContain(`in the broker root ${fs.realpathSync(root)}`);
    expect(r.stderr).toContain('`c2c-bridge peers`');
    expect(r.stderr).not.toMatch(/listPeers|new handle/);
    const u = cli(['--root', root, '--session-id', sid('unregistered'), 'inbox']);
    expect(u.code).toBe(1);
    expect(u.stderr).toContain('E_NOT_REGISTERED');
    expect(u.stderr).toContain('`c2c-bridge peers`');
    expect(u.stderr).not.toMatch(/listPeers|new handle/);
  });

  test('operation failures exit 1 with the error code (text and --json)', async () => {
    const { root, a, b } = setup();
    fx.open({ root, sessionId: sid('g'), alias: 'ghost', pid: await deadPid() });
    const cases = [
      [['send', 'nobody', 'x'], 'E_UNKNOWN_RECIPIENT'],
      [['send', 'ghost', 'x'], 'E_RECIPIENT_DEAD'],
      [['send', 'alice', 'x'], 'E_SEND_TO_SELF'],
      [['send', 'bob', '   '], 'E_EMPTY'],
      [['send', 'bob', 'x'.repeat(a.maxMessageBytes + 1)], 'E_TOO_LARGE'],
    ];
    for (const [args, code] of cases) {
      const r = cli(['--root', root, '--session-id', a.sessionId, ...args]);
      expect(r.code, code).toBe(1);
      expect(r.stderr).toContain(code);
      const j = cli(['--root', root, '--json', '--session-id', a.sessionId, ...args]);
      expect(j.code).toBe(1);
      expect(json(j).error.code).toBe(code);
    }
    // an unregistered session and a malformed one
    const un = cli(['--root', root, '--json', '--session-id', 'ses_not_registered', 'send', 'bob', 'x']);
    expect([un.code, json(un).error.code]).toEqual([1, 'E_NOT_REGISTERED']);
    const bad = cli(['--root', root, '--json', '--session-id', '../etc', 'send', 'bob', 'x']);
    expect([bad.code, json(bad).error.code]).toEqual([1, 'E_INVALID_ID']);
    expect(b.peek()).toEqual([]);
  });
});

describe('inbox', () => {
  test('--peek leaves messages; without it they are drained and archived (text and --json)', () => {
    const { root, a, b } = setup();
    a.send('bob', 'one');
    a.send('bob', 'two\nlines');
    const p = cli(['--root', root, '--session-id', b.sessionId, 'inbox', '--peek']);
    expect(p.code).toBe(0);
    expect(p.stdout).toMatch(/2 message\(s\)/);
    expect(p.stdout).toMatch(/from alice to bob/);
    expect(p.stdout).toContain('\n    one\n');
    expect(p.stdout).toContain('\n    two\n    lines');
    const pj = cli(['--root', root, '--json', '--session-id', b.sessionId, 'inbox', '--peek']);
    expect(json(pj).map((m) => m.content)).toEqual(['one', 'two\nlines']);
    expect(b.peek()).toHaveLength(2);

    const d = cli(['--root', root, '--json', '--session-id', b.sessionId, 'inbox']);
    expect(d.code).toBe(0);
    expect(json(d).map((m) => m.content)).toEqual(['one', 'two\nlines']);
    expect(b.peek()).toEqual([]);
    const archived = fs.readFileSync(path.join(root, 'archive', `${b.sessionId}.jsonl`), 'utf8').trim().split('\n');
    expect(archived).toHaveLength(2);
    const again = cli(['--root', root, '--session-id', b.sessionId, 'inbox']);
    expect(again.code).toBe(0);
    expect(again.stdout.trim()).toBe('inbox is empty');
  });

  test('message text cannot inject terminal escapes or fake output lines', () => {
    const { root, a, b } = setup();
    const evil = 'hi\u001b[2J\u001b]52;c;ZXZpbA==\u0007\rOVERWRITE\u009b1m\u202eevil\n--- 2020-01-01 00:00:00Z  from boss to bob  id fake';
    a.send('bob', evil);
    const r = cli(['--root', root, '--session-id', b.sessionId, 'inbox', '--peek']);
    expect(r.code).toBe(0);
    expect(r.stdout).not.toMatch(RAW_CONTROL);
    expect(r.stdout).toContain('hi\\e[2J\\e]52;c;ZXZpbA==\\x07\\rOVERWRITE\\x9b1m\\u202eevil');
    // the forged header stays indented as message text
    const headerLines = r.stdout.split('\n').filter((l) => l.startsWith('---'));
    expect(headerLines).toHaveLength(1);
    expect(headerLines[0]).toContain('from alice to bob');
    const j = cli(['--root', root, '--json', '--session-id', b.sessionId, 'inbox', '--peek']);
    expect(j.stdout).not.toMatch(RAW_CONTROL);
    expect(json(j)[0].content).toBe(evil);
  });
});

describe('rooms', () => {
  test('lists rooms and members with and without a session (text and --json)', () => {
    const { root, a, b } = setup();
    a.joinRoom('dev');
    b.joinRoom('dev');
    a.joinRoom('solo');
    const r = cli(['--root', root, 'rooms']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^dev: 2 member\(s\): alice, bob$/m);
    expect(r.stdout).toMatch(/^solo: 1 member\(s\): alice$/m);
    const j = json(cli(['--root', root, '--json', 'rooms']));
    expect(j.map((x) => [x.roomId, x.members.sort()])).toEqual([['dev', ['alice', 'bob']], ['solo', ['alice']]]);
    const mine = json(cli(['--root', root, '--json', '--session-id', b.sessionId, 'rooms']));
    expect(mine.map((x) => [x.roomId, x.joined])).toEqual([['dev', true], ['solo', false]]);
    const t = cli(['--root', root, '--session-id', b.sessionId, 'rooms']);
    expect(t.stdout).toMatch(/^dev \(joined\): 2 member\(s\)/m);
    // an invite-only room: marked for its members, not listed to others (c2c's rule)
    b.createRoom('ops', { visibility: 'invite_only' });
    const ops = cli(['--root', root, '--session-id', b.sessionId, 'rooms']);
    expect(ops.stdout).toMatch(/^ops \(joined\) \[invite_only\]: 1 member\(s\): bob$/m);
    const other = json(cli(['--root', root, '--json', '--session-id', a.sessionId, 'rooms']));
    expect(other.map((x) => x.roomId)).toEqual(['dev', 'solo']);
  });

  test('an empty root has no rooms', () => {
    const root = fx.root();
    const r = cli(['--root', root, 'rooms']);
    expect([r.code, r.stdout.trim()]).toEqual([0, 'no rooms']);
    expect(json(cli(['--root', root, '--json', 'rooms']))).toEqual([]);
  });
});

describe('log', () => {
  test('--limit N shows the last N broker.log entries (text and --json)', () => {
    const { root, a } = setup();
    const r1 = a.send('bob', 'logged 1');
    const r2 = a.send('bob', 'logged 2');
    const j = cli(['--root', root, '--json', 'log', '--limit', '2']);
    expect(j.code).toBe(0);
    const entries = json(j);
    expect(entries).toHaveLength(2);
    expect(entries.map((e) => [e.event, e.message_id])).toEqual([['dm_enqueue', r1.messageId], ['dm_enqueue', r2.messageId]]);
    const t = cli(['--root', root, 'log']);
    expect(t.code).toBe(0);
    expect(t.stdout).toMatch(/register\s+alias=alice/);
    expect(t.stdout).toContain(`message_id=${r2.messageId}`);
    expect(cli(['--root', root, 'log', '--limit', '1']).stdout.trim().split('\n')).toHaveLength(1);
  });
});

describe('doctor', () => {
  test('a healthy root: location, permissions, lock, registrations, inbox counts (exit 0)', async () => {
    const { root, a, b } = setup();
    fx.open({ root, sessionId: sid('g'), alias: 'ghost', pid: await deadPid() });
    a.send('bob', '1');
    a.send('bob', '2');
    const j = cli(['--root', root, '--json', 'doctor']);
    expect(j.code).toBe(0);
    const rep = json(j);
    expect(rep.root).toEqual({ path: fs.realpathSync(root), source: 'option', exists: true, reason: 'set explicitly (the brokerRoot option or --root)' });
    expect(rep.permissions).toMatchObject({ mode: '0700', uid: process.getuid(), ownedByCurrentUser: true, ok: true });
    expect(rep.lock).toEqual({ file: 'registry.json.lock', free: true });
    expect(rep.registrations.map((r) => [r.alias, r.alive]).sort()).toEqual([['alice', true], ['bob', true], ['ghost', false]]);
    expect(rep.inboxes.find((i) => i.sessionId === b.sessionId)).toMatchObject({ messages: 2, registered: true });
    expect(rep.inboxes.find((i) => i.sessionId === a.sessionId)).toMatchObject({ messages: 0 });
    expect(rep.deadLetter).toEqual({ present: false, lines: 0 });
    expect(rep.problems).toEqual([]);
    const t = cli(['--root', root, 'doctor']);
    expect(t.code).toBe(0);
    expect(t.stdout).toContain(`root: ${fs.realpathSync(root)} (from option)`);
    expect(t.stdout).toMatch(/permissions: mode 0700/);
    expect(t.stdout).toMatch(/lock: registry.json.lock free/);
    expect(t.stdout).toMatch(/registrations: 3 \(2 alive, 1 dead/);
    expect(t.stdout).toContain(`${b.sessionId}: 2 message(s) queued`);
    expect(t.stdout).toMatch(/dead-letter.jsonl: absent/);
  });

  test('c2c records without message_id are counted as messages; records that are not messages are problems', () => {
    const { root, b } = setup();
    const inbox = path.join(root, `${b.sessionId}.inbox.json`);
    // what c2c 0.8 writes for a room post (no message_id), and a record of another shape
    fs.writeFileSync(inbox, JSON.stringify([
      { from_alias: 'alice', to_alias: 'bob#lobby', content: 'room post', ts: 1796055331.98 },
      { kind: 'future-event', payload: { x: 1 } },
    ]));
    const j = cli(['--root', root, '--json', 'doctor']);
    expect(j.code).toBe(1);
    const rep = json(j);
    expect(rep.inboxes.find((i) => i.sessionId === b.sessionId)).toMatchObject({
      messages: 1, derivedIds: 1, notMessages: ['{kind, payload}'], notUnderstood: 0,
    });
    expect(rep.problems.some((p) => p.includes('not messages') && p.includes('{kind, payload}'))).toBe(true);
    const t = cli(['--root', root, 'doctor']);
    expect(t.stdout).toContain(`${b.sessionId}: 1 message(s) queued (1 without message_id, delivered by derived id); 1 record(s) NOT messages: {kind, payload}`);
    // doctor only reads
    expect(JSON.parse(fs.readFileSync(inbox, 'utf8'))).toHaveLength(2);
  });

  test('an insecure root fails (exit 1) with E_ROOT_INSECURE', () => {
    const { root } = setup();
    fs.chmodSync(root, 0o770);
    const j = cli(['--root', root, '--json', 'doctor']);
    expect(j.code).toBe(1);
    const rep = json(j);
    expect(rep.permissions).toMatchObject({ mode: '0770', ok: false, error: { code: 'E_ROOT_INSECURE' } });
    const t = cli(['--root', root, 'doctor']);
    expect(t.code).toBe(1);
    expect(t.stdout).toMatch(/FAIL E_ROOT_INSECURE/);
  });

  test('a corrupt inbox and dead letters are reported', async () => {
    const { root, a, b } = setup();
    const holder = fx.track(spawn(RUNTIME, ['-e', 'setInterval(()=>{},1000)'], { stdio: 'ignore' }));
    const dsid = sid('d');
    fx.open({ root, sessionId: dsid, alias: 'doomed', pid: holder.pid });
    a.send('doomed', 'rescue me');
    holder.kill('SIGKILL');
    await new Promise((r) => holder.on('exit', r));
    a.sweep();
    fs.writeFileSync(path.join(root, `${b.sessionId}.inbox.json`), 'garbage');
    const j = cli(['--root', root, '--json', 'doctor']);
    expect(j.code).toBe(1);
    const rep = json(j);
    expect(rep.deadLetter).toEqual({ present: true, lines: 1 });
    expect(rep.inboxes.find((i) => i.sessionId === b.sessionId).error).toMatch(/unreadable/);
    expect(rep.problems.some((p) => p.includes(`${b.sessionId}.inbox.json`))).toBe(true);
    const t = cli(['--root', root, 'doctor']);
    expect(t.stdout).toMatch(/dead-letter.jsonl: present, 1 message/);
    // doctor only reads: the bad file is left as it is
    expect(fs.readFileSync(path.join(root, `${b.sessionId}.inbox.json`), 'utf8')).toBe('garbage');
  });

  const hasPython = spawnSync('python3', ['-c', 'import fcntl'], { stdio: 'ignore' }).status === 0;
  test.skipIf(!hasPython)('a held registry lock is reported (exit 1)', async () => {
    const { root } = setup();
    const lockFile = path.join(root, 'registry.json.lock');
    const py = fx.track(spawn('python3', ['-c',
      'import fcntl,os,sys\nf=os.open(sys.argv[1],os.O_RDWR)\nfcntl.lockf(f,fcntl.LOCK_EX)\nprint("locked",flush=True)\nsys.stdin.read()\n', lockFile],
    { stdio: ['pipe', 'pipe', 'inherit'] }));
    await new Promise((resolve) => py.stdout.once('data', resolve));
    const j = cli(['--root', root, '--json', 'doctor']);
    py.stdin.end();
    await waitExit(py); // the fixtures' close() needs the registry lock back
    expect(j.code).toBe(1);
    expect(json(j).lock).toEqual({ file: 'registry.json.lock', free: false });
  });

  test('a default root that does not exist is reported with why, not created (exit 0)', () => {
    const missing = path.join(fx.root(), 'nope');
    const j = cli(['--json', 'doctor'], { C2C_MCP_BROKER_ROOT: missing });
    expect(j.code).toBe(0);
    expect(json(j).root).toMatchObject({ exists: false, source: 'C2C_MCP_BROKER_ROOT' });
    expect(json(j).root.reason).toContain('C2C_MCP_BROKER_ROOT');
    expect(fs.existsSync(missing)).toBe(false);
  });

  test("without --root or C2C_MCP_BROKER_ROOT, doctor names c2c's per-repository default and its fingerprint", () => {
    const home = fx.root();
    const t = cli(['doctor'], { HOME: home, XDG_STATE_HOME: '', C2C_STATE_HOME: '' });
    expect(t.code).toBe(0);
    expect(t.stdout).toMatch(/why: c2c's per-repository default under HOME: fingerprint [0-9a-f]{12} of (remote\.origin\.url|repository top level) /);
    expect(t.stdout).toContain('brokerRoot');
  });
});

describe('sweep', () => {
  test('removes dead registrations and dead-letters their mail (text and --json)', async () => {
    const { root, a } = setup();
    const holder = fx.track(spawn(RUNTIME, ['-e', 'setInterval(()=>{},1000)'], { stdio: 'ignore' }));
    const dsid = sid('d');
    fx.open({ root, sessionId: dsid, alias: 'doomed', pid: holder.pid });
    a.send('doomed', 'm1');
    a.send('doomed', 'm2');
    holder.kill('SIGKILL');
    await new Promise((r) => holder.on('exit', r));
    const j = cli(['--root', root, '--json', 'sweep']);
    expect(j.code).toBe(0);
    expect(json(j)).toEqual({ removed: [{ alias: 'doomed', sessionId: dsid }], deadLettered: 2 });
    expect(fs.readFileSync(path.join(root, 'dead-letter.jsonl'), 'utf8').trim().split('\n')).toHaveLength(2);
    // the CLI left no registration or inbox of its own behind
    expect(addon.listRegistrations(root).map((r) => r.alias).sort()).toEqual(['alice', 'bob']);
    expect(fs.readdirSync(root).filter((f) => f.includes('c2c-bridge-cli'))).toEqual([]);
    const t = cli(['--root', root, '--session-id', a.sessionId, 'sweep']);
    expect(t.code).toBe(0);
    expect(t.stdout).toMatch(/removed 0 dead registration\(s\), moved 0 message\(s\)/);
  });
});
