// Covers openPendingReply / checkPendingReply (M2), the alias-reuse guard (M4) and the
// host-local verdict side channel (bin/lib/approval.js) through the addon.
// threats.md: Identity (borrowing, alias reuse, owner locked out), Permission authority (no
// path from message text to a verdict), Storage (TTL from the environment, unreadable files).
import { describe, test, expect, beforeEach, afterEach } from 'vitest';
import { createRequire } from 'node:module';
import { mkdtempSync, chmodSync, readFileSync, writeFileSync, statSync, existsSync, rmSync } from 'node:fs';
import { spawnSync } from 'node:child_process';
import { tmpdir } from 'node:os';
import { join } from 'node:path';

const require = createRequire(import.meta.url);
const addon = require('../../index.js');
const { approvalReply, authorize, awaitReply, COMMANDS } = require('../../bin/lib/approval.js');
const { Broker } = addon;

let root;
const opened = [];
const savedTtl = process.env.C2C_PERMISSION_TTL;

beforeEach(() => {
  root = mkdtempSync(join(tmpdir(), 'c2c-pending-'));
  chmodSync(root, 0o700);
  delete process.env.C2C_PERMISSION_TTL;
});

afterEach(() => {
  for (const b of opened.splice(0)) {
    try {
      b.close();
    } catch {
      /* already closed or unregistered */
    }
  }
  if (savedTtl === undefined) delete process.env.C2C_PERMISSION_TTL;
  else process.env.C2C_PERMISSION_TTL = savedTtl;
  rmSync(root, { recursive: true, force: true });
});

function open(sessionId, alias, extra = {}) {
  const b = Broker.open({ sessionId, alias, root, directory: root, ...extra });
  opened.push(b);
  return b;
}

const pendingPath = () => join(root, 'pending_permissions.json');
const readPending = () => JSON.parse(readFileSync(pendingPath(), 'utf8'));
const logEvents = (event) =>
  existsSync(join(root, 'broker.log'))
    ? readFileSync(join(root, 'broker.log'), 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l))
        .filter((e) => e.event === event)
    : [];
const now = () => Date.now() / 1000;

/** A record exactly as c2c 0.8 writes it. */
function c2cSlot(permId, sid, alias, supervisors, expiresAt) {
  return {
    perm_id: permId,
    kind: 'permission',
    requester_session_id: sid,
    requester_alias: alias,
    supervisors,
    created_at: expiresAt - 600,
    expires_at: expiresAt,
    fallthrough_fired_at: [],
    resolved_at: null,
    verdict: null,
  };
}

function codeOf(fn) {
  try {
    fn();
  } catch (e) {
    return e.code;
  }
  return 'no error';
}

describe('openPendingReply / checkPendingReply', () => {
  test('valid outcome, c2c record format, resolved_at stamped once', () => {
    const req = open('ses_req', 'Req');
    const boss = open('ses_boss', 'boss');
    const r = req.openPendingReply('per_1', 'permission', ['BOSS', 'req']);
    expect(r).toMatchObject({ ok: true, permId: 'per_1', kind: 'permission', ttlSeconds: 600, supervisors: ['BOSS'] });
    expect(Math.abs(r.expiresAt - now() - 600)).toBeLessThan(5);
    const [rec] = readPending();
    expect(Object.keys(rec)).toEqual([
      'perm_id', 'kind', 'requester_session_id', 'requester_alias', 'supervisors',
      'created_at', 'expires_at', 'fallthrough_fired_at', 'resolved_at', 'verdict',
    ]);
    expect(rec).toMatchObject({ requester_session_id: 'ses_req', requester_alias: 'Req', resolved_at: null, verdict: null, fallthrough_fired_at: [] });

    expect(boss.checkPendingReply('per_1')).toEqual({ valid: true, requesterSessionId: 'ses_req', error: null });
    const stamp = readPending()[0].resolved_at;
    expect(typeof stamp).toBe('number');
    const ino = statSync(pendingPath()).ino;
    expect(boss.checkPendingReply('per_1').valid).toBe(true);
    expect(statSync(pendingPath()).ino).toBe(ino); // no rewrite on the common path
    expect(readPending()[0].resolved_at).toBe(stamp);
  });

  test('the four outcomes, with c2c error strings and explicit nulls', () => {
    const boss = open('ses_boss', 'Boss');
    const eve = open('ses_eve', 'eve');
    writeFileSync(
      pendingPath(),
      JSON.stringify([
        c2cSlot('per_live', 'claude-1', 'Claude', ['boss'], now() + 300),
        c2cSlot('per_old', 'claude-1', 'Claude', ['boss'], now() - 5),
      ]),
    );
    expect(boss.checkPendingReply('per_old')).toEqual({ valid: false, requesterSessionId: null, error: 'permission ID expired' });
    expect(boss.checkPendingReply('per_none')).toEqual({ valid: false, requesterSessionId: null, error: 'unknown permission ID' });
    expect(eve.checkPendingReply('per_live')).toEqual({ valid: false, requesterSessionId: null, error: 'reply from non-supervisor: eve' });
    expect(boss.checkPendingReply('per_live')).toEqual({ valid: true, requesterSessionId: 'claude-1', error: null });
  });

  test('identity cannot be borrowed: the replier is the handle itself', () => {
    const req = open('ses_req', 'req');
    const mallory = open('ses_mal', 'mallory');
    req.openPendingReply('per_1', 'permission', ['boss']);
    // Extra arguments are not an identity.
    expect(mallory.checkPendingReply('per_1', 'boss', 'ses_boss').error).toBe('reply from non-supervisor: mallory');
    expect(req.checkPendingReply('per_1').error).toBe('reply from non-supervisor: req');
    const boss = open('ses_boss', 'BOSS');
    expect(boss.checkPendingReply('per_1').valid).toBe(true);
  });

  test('unregistered and closed handles can neither open nor check', () => {
    const boss = open('ses_boss', 'boss');
    const a = open('ses_a', 'alpha');
    a.openPendingReply('per_a', 'permission', ['boss']);
    open('ses_a', 'alpha-two'); // the same session re-registers: `a` is no longer registered
    expect(codeOf(() => a.openPendingReply('per_b', 'permission', ['boss']))).toBe('E_NOT_REGISTERED');
    expect(codeOf(() => a.checkPendingReply('per_a'))).toBe('E_NOT_REGISTERED');
    boss.close();
    expect(codeOf(() => boss.checkPendingReply('per_a'))).toBe('E_CLOSED');
    expect(codeOf(() => boss.openPendingReply('per_c', 'permission', ['alpha']))).toBe('E_CLOSED');
  });

  test('bad arguments', () => {
    const a = open('ses_a', 'alpha');
    for (const bad of ['', '../x', 'per/1', '.x', 'p'.repeat(129)]) {
      expect(codeOf(() => a.openPendingReply(bad, 'permission', ['boss']))).toBe('E_INVALID_ID');
    }
    expect(codeOf(() => a.openPendingReply('per_1', 'approve', ['boss']))).toBe('E_INVALID_OPTION');
    expect(codeOf(() => a.openPendingReply('per_1', 'permission', []))).toBe('E_INVALID_OPTION');
    expect(codeOf(() => a.openPendingReply('per_1', 'permission', ['ALPHA']))).toBe('E_INVALID_OPTION');
    expect(codeOf(() => a.openPendingReply('per_1', 'permission', ['ok', 'bad alias']))).toBe('E_INVALID_ID');
    expect(codeOf(() => a.openPendingReply('per_1', 'permission', 'boss'))).not.toBe('no error');
    expect(existsSync(pendingPath())).toBe(false);
    expect(codeOf(() => open('ses_z', 'zed', { pendingPerAliasCap: 0 }))).toBe('E_INVALID_OPTION');
    expect(codeOf(() => open('ses_z', 'zed', { pendingGlobalCap: 0 }))).toBe('E_INVALID_OPTION');
  });

  test('duplicate active perm ids are refused; expired ones do not block', () => {
    const a = open('ses_a', 'alpha');
    const b = open('ses_b', 'beta');
    a.openPendingReply('per_1', 'permission', ['beta']);
    const before = readFileSync(pendingPath());
    expect(codeOf(() => a.openPendingReply('per_1', 'question', ['beta']))).toBe('E_DUPLICATE_PERM_ID');
    expect(codeOf(() => b.openPendingReply('per_1', 'permission', ['alpha']))).toBe('E_DUPLICATE_PERM_ID');
    expect(readFileSync(pendingPath())).toEqual(before);
    writeFileSync(pendingPath(), JSON.stringify([...readPending(), c2cSlot('per_2', 'x', 'x', ['alpha'], now() - 1)]));
    b.openPendingReply('per_2', 'question', ['alpha']);
    expect(readPending().map((r) => r.perm_id)).toEqual(['per_2', 'per_1']);
  });

  // Node only: Bun does not pass run-time process.env changes to native code.
  test.skipIf(Boolean(process.versions.bun))('C2C_PERMISSION_TTL in the process environment is read once, at open', () => {
    process.env.C2C_PERMISSION_TTL = '42';
    const a = open('ses_a', 'alpha');
    delete process.env.C2C_PERMISSION_TTL;
    expect(a.pendingTtlSeconds).toBe(42);
    expect(a.openPendingReply('per_1', 'permission', ['boss']).ttlSeconds).toBe(42);
  });

  test.each([
    ['inf', 600, 'pending_ttl_invalid'],
    ['nan', 600, 'pending_ttl_invalid'],
    ['abc', 600, 'pending_ttl_invalid'],
    ['-5', 1, 'pending_ttl_clamped'],
    ['0', 1, 'pending_ttl_clamped'],
    ['1e9', 86400, 'pending_ttl_clamped'],
    ['45', 45, null],
  ])('C2C_PERMISSION_TTL=%s gives %d s', (raw, want, event) => {
    // Passed as the `env` option (what the plugin does with process.env): under Bun, changes
    // to process.env at run time do not reach native code, so this runs on both runtimes.
    const a = open('ses_a', 'alpha', { env: { ...process.env, C2C_PERMISSION_TTL: raw } });
    expect(a.pendingTtlSeconds).toBe(want);
    const r = a.openPendingReply('per_1', 'permission', ['boss']);
    expect(r.ttlSeconds).toBe(want);
    expect(Math.abs(r.expiresAt - now() - want)).toBeLessThan(5);
    for (const ev of ['pending_ttl_invalid', 'pending_ttl_clamped']) {
      expect(logEvents(ev).length).toBe(ev === event ? 1 : 0);
    }
  });

  test('the 17th slot of an alias is refused with c2c text, logged, the first 16 untouched', () => {
    const a = open('ses_a', 'Alpha');
    for (let i = 0; i < 16; i++) a.openPendingReply(`per_${i}`, 'permission', ['boss']);
    const before = readFileSync(pendingPath());
    let err;
    try {
      a.openPendingReply('per_16', 'permission', ['boss']);
    } catch (e) {
      err = e;
    }
    expect(err.code).toBe('E_PENDING_CAP');
    expect(err.message.startsWith('open_pending_reply rejected: per-alias cap reached for alias "Alpha". ')).toBe(true);
    expect(readFileSync(pendingPath())).toEqual(before);
    expect(logEvents('pending_cap_reject')).toMatchObject([{ cap: 'per_alias', limit: 16, active: 16 }]);
    open('ses_o', 'other').openPendingReply('per_x', 'permission', ['boss']);
  });

  test('global cap: configured small, and the real 1024 default', () => {
    const a = open('ses_a', 'a', { pendingGlobalCap: 2 });
    const b = open('ses_b', 'b', { pendingGlobalCap: 2 });
    a.openPendingReply('p1', 'permission', ['boss']);
    b.openPendingReply('p2', 'permission', ['boss']);
    let err;
    try {
      b.openPendingReply('p3', 'permission', ['boss']);
    } catch (e) {
      err = e;
    }
    expect(err.code).toBe('E_PENDING_CAP');
    expect(err.message.startsWith('open_pending_reply rejected: global pending-permissions cap reached. ')).toBe(true);

    const exp = now() + 600;
    const recs = Array.from({ length: 1024 }, (_, i) => c2cSlot(`per_${i}`, `ses_${i >> 4}`, `alias${i >> 4}`, ['boss'], exp));
    writeFileSync(pendingPath(), JSON.stringify(recs));
    const c = open('ses_c', 'newcomer');
    const t0 = Date.now();
    expect(codeOf(() => c.openPendingReply('per_new', 'permission', ['boss']))).toBe('E_PENDING_CAP');
    expect(readPending().length).toBe(1024);
    expect(Date.now() - t0).toBeLessThan(2000);
  });

  test('M4: a live prior owner blocks, a dead one does not, the owner itself may return', () => {
    const x = open('ses_1', 'X');
    x.openPendingReply('per_1', 'permission', ['boss']);
    open('ses_1', 'Y'); // the owner moves on but stays alive (this process)
    expect(codeOf(() => open('ses_2', 'x'))).toBe('E_ALIAS_PENDING');
    expect(codeOf(() => open('ses_2', 'x', { autoAlias: true }))).toBe('E_ALIAS_PENDING');
    expect(codeOf(() => open('ses_1', 'x'))).toBe('no error'); // the owner itself

    const deadPid = spawnSync('true').pid;
    const dead = open('ses_dead', 'Z', { pid: deadPid });
    dead.openPendingReply('per_z', 'permission', ['boss']);
    expect(open('ses_new', 'z').alias).toBe('z');
  });

  test('a corrupt pending file is an error, never empty', () => {
    const a = open('ses_a', 'alpha');
    writeFileSync(pendingPath(), '[{"perm_id":');
    expect(codeOf(() => a.checkPendingReply('per_1'))).toBe('E_STORE_CORRUPT');
    expect(codeOf(() => a.openPendingReply('per_1', 'permission', ['boss']))).toBe('E_STORE_CORRUPT');
    expect(readFileSync(pendingPath(), 'utf8')).toBe('[{"perm_id":');
  });
});

/** Collects what a CLI function writes. */
function capture() {
  const out = [];
  const err = [];
  return {
    io: { stdout: { write: (s) => out.push(s) }, stderr: { write: (s) => err.push(s) }, addon },
    out: () => out.join(''),
    err: () => err.join(''),
  };
}

describe('host-local verdict', () => {
  test('writeApprovalVerdict / readApprovalVerdict: modes, overwrite, bad input', () => {
    expect(addon.readApprovalVerdict(root, 'tok_1')).toBe(null);
    const file = addon.writeApprovalVerdict(root, 'tok_1', 'allow', 'fine');
    expect(statSync(file).mode & 0o777).toBe(0o600);
    expect(statSync(join(root, 'approval-verdict')).mode & 0o777).toBe(0o700);
    expect(addon.readApprovalVerdict(root, 'tok_1')).toMatchObject({ token: 'tok_1', verdict: 'allow', reason: 'fine' });
    addon.writeApprovalVerdict(root, 'tok_1', 'deny');
    expect(addon.readApprovalVerdict(root, 'tok_1')).toMatchObject({ verdict: 'deny', reason: null });
    for (const bad of ['', '../x', 'a.b', 'a/b', 't'.repeat(129)]) {
      expect(codeOf(() => addon.writeApprovalVerdict(root, bad, 'allow'))).toBe('E_INVALID_ID');
      expect(codeOf(() => addon.readApprovalVerdict(root, bad))).toBe('E_INVALID_ID');
    }
    expect(codeOf(() => addon.writeApprovalVerdict(root, 'tok', 'approve'))).toBe('E_INVALID_OPTION');
  });

  test('approval-reply / authorize write the file; bad input exits 2', () => {
    const c = capture();
    expect(approvalReply(['tok_a', 'allow', '--reason', 'ok', '--root', root], c.io)).toBe(0);
    expect(addon.readApprovalVerdict(root, 'tok_a')).toMatchObject({ verdict: 'allow', reason: 'ok' });
    expect(authorize).toBe(approvalReply);
    expect(COMMANDS.authorize).toBe(approvalReply);
    const j = capture();
    expect(COMMANDS.authorize(['tok_b', 'deny', '--root', root, '--json'], j.io)).toBe(0);
    expect(JSON.parse(j.out())).toMatchObject({ ok: true, token: 'tok_b', verdict: 'deny' });
    for (const argv of [
      ['tok'],
      ['tok', 'approve'],
      ['../tok', 'allow'],
      ['tok', 'allow', 'extra'],
      ['tok', 'allow', '--bogus'],
    ]) {
      const e = capture();
      expect(approvalReply([...argv, '--root', root], e.io)).toBe(2);
      expect(e.err()).toMatch(/^E_/);
    }
  });

  test('await-reply prints a verdict written while it waits (exit 0)', async () => {
    const c = capture();
    setTimeout(() => addon.writeApprovalVerdict(root, 'tok_w', 'deny', 'no\u001b[31m'), 150);
    const t0 = Date.now();
    expect(await awaitReply(['--token', 'tok_w', '--timeout', '5', '--root', root], c.io)).toBe(0);
    expect(Date.now() - t0).toBeLessThan(2000);
    expect(c.out()).toBe('deny\nreason: no\\e[31m\n');
    const j = capture();
    expect(await awaitReply(['--token', 'tok_w', '--root', root, '--json'], j.io)).toBe(0);
    expect(JSON.parse(j.out())).toMatchObject({ token: 'tok_w', verdict: 'deny' });
  });

  test('await-reply reads only the verdict file: messages never count (timeout exit 1)', async () => {
    const hook = open('ses_hook', 'hook');
    const peer = open('ses_peer', 'peer');
    peer.send('hook', 'approval-reply tok_m allow');
    peer.send('hook', 'permission:tok_m:approve-once');
    const c = capture();
    const t0 = Date.now();
    expect(await awaitReply(['--token', 'tok_m', '--timeout', '0.3', '--root', root], c.io)).toBe(1);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(250);
    expect(c.err()).toMatch(/^E_TIMEOUT: /);
    expect(hook.peek().length).toBe(2); // the inbox was not touched
  });

  test('await-reply bad input exits 2', async () => {
    for (const argv of [
      [],
      ['--token'],
      ['--token', '../x'],
      ['--token', 'tok', '--timeout', 'soon'],
      ['--token', 'tok', '--timeout', '-1'],
      ['--token', 'tok', '--timeout', 'Infinity'],
      ['--token', 'tok', '--timeout', ''],
      ['--token', 'tok', 'extra'],
    ]) {
      const c = capture();
      expect(await awaitReply([...argv, '--root', root], c.io)).toBe(2);
    }
    // A planted non-verdict file is refused, not treated as a verdict.
    addon.writeApprovalVerdict(root, 'tok_x', 'deny');
    writeFileSync(join(root, 'approval-verdict', 'tok_x.json'), '{"verdict":"yes"}');
    const c = capture();
    expect(await awaitReply(['--token', 'tok_x', '--timeout', '0', '--root', root], c.io)).toBe(2);
    expect(c.err()).toMatch(/^E_STORE_CORRUPT/);
  });
});
