// Covers issue 12 through the addon and the CLI: one bad record never blocks an inbox, an
// unreadable registration keeps its alias, probeLock takes plain file names only.
// threats.md families: Storage and the trust boundary, Delivery.
import { describe, expect, test } from 'vitest';
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { addon, catchErr, REPO_DIR, RUNTIME, sid, useBrokerFixtures } from '../helpers/broker.mjs';

const fx = useBrokerFixtures();
const BIN = path.join(REPO_DIR, 'bin', 'c2c-bridge.js');

function cli(args) {
  const env = { ...process.env };
  delete env.C2C_MCP_SESSION_ID;
  delete env.C2C_MCP_BROKER_ROOT;
  const r = spawnSync(RUNTIME, [BIN, ...args], { env, encoding: 'utf8', timeout: 20000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/** Append raw record bytes to the JSON array in `file`, as another program's writer would. */
function appendRaw(file, records) {
  const bytes = fs.readFileSync(file);
  const end = bytes.lastIndexOf(0x5d); // ']'
  const head = bytes.subarray(0, end);
  const empty = head.toString('latin1').trim().endsWith('[');
  const parts = [head];
  records.forEach((r, i) => {
    if (!empty || i > 0) parts.push(Buffer.from(','));
    parts.push(Buffer.isBuffer(r) ? r : Buffer.from(r, 'latin1'));
  });
  parts.push(Buffer.from(']'));
  fs.writeFileSync(file, Buffer.concat(parts));
}

describe('a poisoned inbox', () => {
  test('invalid Unicode is repaired and framed as such, an unreadable record is moved aside, the rest is delivered', () => {
    const root = fx.root();
    const a = fx.open({ root, sessionId: sid('a'), alias: 'alice', inbound: 'accept' });
    const b = fx.open({ root, sessionId: sid('b'), alias: 'bob', inbound: 'accept' });
    const first = a.send('bob', 'before').messageId;
    const inbox = path.join(root, `${b.sessionId}.inbox.json`);
    // the example: content cut in the middle of an emoji; Node's JSON.parse reads it
    const surrogate = `{"from_alias":"alice","to_alias":"bob","content":"status: build green \\ud83c","ts":1,"message_id":"m-sur"}`;
    expect(JSON.parse(surrogate).content).toBe('status: build green \ud83c');
    const latin1 = Buffer.concat([Buffer.from('{"from_alias":"carol","to_alias":"bob","content":"caf'), Buffer.from([0xe9]), Buffer.from('","ts":2,"message_id":"m-lat"}')]);
    const broken = `{"from_alias":"alice","from_session_id":"${a.sessionId}","to_alias":"bob","message_id":"m-bad","content": tru}`;
    appendRaw(inbox, [surrogate, latin1, broken]);

    const peeked = b.peek();
    expect(peeked.map((m) => m.messageId)).toEqual([first, 'm-sur', 'm-lat']);
    expect(peeked[1]).toMatchObject({ content: 'status: build green \ufffd', repaired: true });
    expect(peeked[2]).toMatchObject({ content: 'caf\ufffd', repaired: true });
    expect(peeked[0].repaired).toBe(false);

    // sending to that session works
    const after = a.send('bob', 'after').messageId;
    const gate = b.gateInbox();
    expect(gate.deliver.map((d) => d.message.messageId)).toEqual([first, 'm-sur', 'm-lat', after]);
    expect(gate.deliver[1].framed).toContain('note: the stored text was not valid Unicode');
    expect(gate.deliver[0].framed).not.toContain('not valid Unicode');

    // the unreadable record (and the originals of the repaired ones) kept byte for byte
    const q = path.join(root, 'quarantine');
    const kept = fs.readdirSync(q).map((f) => fs.readFileSync(path.join(q, f)));
    expect(kept.some((k) => k.equals(Buffer.from(broken)))).toBe(true);
    expect(kept.some((k) => k.equals(latin1))).toBe(true);
    expect(kept.some((k) => k.equals(Buffer.from(surrogate)))).toBe(true);
    // its sender is told
    expect(a.receipts().find((r) => r.messageId === 'm-bad')).toMatchObject({ status: 'unreadable', toAlias: 'bob' });
    // and the inbox parses as a whole again
    expect(JSON.parse(fs.readFileSync(inbox, 'utf8'))).toHaveLength(4);
  });

  test('a file that is not a JSON array at all stays E_STORE_CORRUPT', () => {
    const root = fx.root();
    const a = fx.open({ root, sessionId: sid('a'), alias: 'alice' });
    const b = fx.open({ root, sessionId: sid('b'), alias: 'bob' });
    const inbox = path.join(root, `${b.sessionId}.inbox.json`);
    fs.writeFileSync(inbox, '[{"content":"\\ud83c"},');
    expect(catchErr(() => b.peek()).code).toBe('E_STORE_CORRUPT');
    expect(catchErr(() => a.send('bob', 'x')).code).toBe('E_STORE_CORRUPT');
    expect(fs.readFileSync(inbox, 'utf8')).toBe('[{"content":"\\ud83c"},');
  });
});

describe('an unreadable registration', () => {
  test('keeps its alias, and doctor shows it as unreadable', () => {
    const root = fx.root();
    fx.open({ root, sessionId: sid('a'), alias: 'alice' });
    appendRaw(path.join(root, 'registry.json'), [
      '{"session_id":"ses_c2c_bob","alias":"bob","pid":1,"pid_start_time":"12","registered_at":1.0}',
    ]);
    const e = catchErr(() => addon.Broker.open({ root, sessionId: sid('n'), alias: 'BOB' }));
    expect(e.code).toBe('E_ALIAS_TAKEN');
    expect(JSON.parse(fs.readFileSync(path.join(root, 'registry.json'), 'utf8')).filter((r) => /^bob$/i.test(r.alias))).toHaveLength(1);
    expect(addon.listUnreadableRegistrations(root)).toEqual([
      { alias: 'bob', sessionId: 'ses_c2c_bob', detail: expect.stringContaining('string') },
    ]);
    const j = cli(['--root', root, '--json', 'doctor']);
    expect(j.code).toBe(1);
    const rep = JSON.parse(j.stdout);
    expect(rep.unreadableRegistrations.map((u) => u.alias)).toEqual(['bob']);
    expect(rep.problems.some((p) => p.includes('unreadable registration for alias "bob"'))).toBe(true);
    expect(cli(['--root', root, 'doctor']).stdout).toMatch(/UNREADABLE {2}bob {2}ses_c2c_bob/);
  });
});

describe('probeLock', () => {
  test('an empty or path-like file name is refused and nothing is created', () => {
    const parent = fx.root();
    const root = path.join(parent, 'broker');
    fs.mkdirSync(root, { mode: 0o700 });
    for (const name of ['', '.', '..', '../x', 'a/b', '.hidden']) {
      expect(catchErr(() => addon.probeLock(root, name)).code, name).toBe('E_INVALID_ARG');
    }
    expect(fs.readdirSync(parent)).toEqual(['broker']);
    expect(fs.readdirSync(root)).toEqual([]);
    expect(addon.probeLock(root, 'registry.json')).toBe(true);
  });
});
