// Covers: `c2c-bridge doctor`: root location and source, mode and owner, lock health,
// registrations, inboxes record by record, dead letters; doctor only reads.
// threats.md families: Storage (doctor's checks).
import { describe, expect, test } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { deadPid, RUNTIME, sid, waitExit } from '../helpers/broker.mjs';
import { json, cli, useCli } from './run.mjs';

const { fx, setup } = useCli();

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

  test('doctor changes nothing: a corrupt inbox is reported, not copied aside; sizes are reported', () => {
    const { root, b } = setup();
    fs.writeFileSync(path.join(root, `${b.sessionId}.inbox.json`), '{"not": "an array"}');
    const before = fs.readdirSync(root).sort();
    const rep = json(cli(['--root', root, '--json', 'doctor']));
    expect(rep.inboxes.find((i) => i.sessionId === b.sessionId)).toEqual({ sessionId: b.sessionId, registered: true, error: 'not a JSON array' });
    expect(rep.problems).toContain(`${b.sessionId}.inbox.json: not a JSON array`);
    expect(fs.readdirSync(root).sort()).toEqual(before);
    fs.writeFileSync(path.join(root, `${b.sessionId}.inbox.json`), '[]');
    const ok = json(cli(['--root', root, '--json', 'doctor']));
    expect(ok.inboxes.find((i) => i.sessionId === b.sessionId)).toEqual({
      sessionId: b.sessionId, registered: true, messages: 0, bytes: 2, derivedIds: 0, notMessages: [], notUnderstood: 0,
    });
  });

  test('symlinked inbox and dead-letter files are reported, never followed', () => {
    const { root, b } = setup();
    const outside = path.join(fx.root(), 'x.json');
    fs.writeFileSync(outside, '[]\n');
    fs.rmSync(path.join(root, `${b.sessionId}.inbox.json`), { force: true });
    fs.symlinkSync(outside, path.join(root, `${b.sessionId}.inbox.json`));
    fs.symlinkSync(outside, path.join(root, 'dead-letter.jsonl'));
    const j = cli(['--root', root, '--json', 'doctor']);
    expect(j.code).toBe(1);
    const rep = json(j);
    expect(rep.inboxes.find((i) => i.sessionId === b.sessionId).error).toBe('symlink (never followed)');
    expect(rep.deadLetter).toEqual({ present: true, lines: null });
    expect(rep.problems.some((p) => p.startsWith('dead-letter.jsonl is a symlink'))).toBe(true);
  });
});

