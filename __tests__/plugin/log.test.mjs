// Covers plugin/src/log.mts `forwardDiagnostics`: the native core's diagnostics
// (`C2C_BRIDGE_LOG`) reach OpenCode's log (`client.app.log`) through the plugin's logger, with
// ERROR/WARN levels kept; unset, nothing is installed; a bad filter is one warning, never a
// throw. The lines themselves are Rust's (tests/diagnostics.rs, __tests__/addon/diagnostics).
import { afterAll, describe, expect, test, vi } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createLogger, forwardDiagnostics } from '../../plugin/dist/log.mjs';
import { addon, waitExit, waitFor } from '../helpers/broker.mjs';

const hasPython = spawnSync('python3', ['-c', 'import fcntl'], { stdio: 'ignore' }).status === 0;
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'c2c-log-'));
fs.chmodSync(tmp, 0o700);
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** A fake OpenCode client recording `app.log` bodies. */
function fakeClient() {
  const sent = [];
  return { sent, client: { app: { log: async ({ body }) => { sent.push(body); } } } };
}

/** A spy addon recording the calls `forwardDiagnostics` makes. */
function spyAddon(initResult) {
  const calls = [];
  return {
    calls,
    sink: () => calls.find((c) => c[0] === 'sink')?.[1],
    initDiagnostics: (f) => {
      calls.push(['init', f]);
      if (initResult instanceof Error) throw initResult;
      return initResult;
    },
    setDiagnosticsSink: (cb) => calls.push(['sink', cb]),
  };
}

describe('forwardDiagnostics', () => {
  test('unset: the addon is not touched', () => {
    const a = spyAddon(true);
    forwardDiagnostics(a, createLogger(undefined), {});
    expect(a.calls).toEqual([]);
  });

  test('set: the filter is passed, lines go to OpenCode only, ERROR/WARN keep their level', async () => {
    const a = spyAddon(true);
    const { sent, client } = fakeClient();
    const logger = createLogger(client);
    logger.ready();
    forwardDiagnostics(a, logger, { C2C_BRIDGE_LOG: 'c2c_bridge::store=debug' });
    expect(a.calls[0]).toEqual(['init', 'c2c_bridge::store=debug']);
    const sink = a.sink();
    sink('2026-11-30T21:00:00.000000Z  WARN c2c_bridge::store::lock: lock timeout path="/r/x.lock"');
    sink('2026-11-30T21:00:00.000000Z DEBUG c2c_bridge::store::lock: lock held elsewhere: waiting detail="WARN"');
    sink('2026-11-30T21:00:00.000000Z ERROR c2c_bridge::watch: inbox watcher error');
    await waitFor(() => sent.length === 3, { what: 'three app.log calls' });
    expect(sent.map((b) => [b.service, b.level])).toEqual([
      ['c2c-bridge', 'warn'], ['c2c-bridge', 'info'], ['c2c-bridge', 'error'],
    ]);
    expect(sent[0].message).toContain('lock timeout');
  });

  test('off or refused: no sink; a bad filter is one warning', () => {
    const off = spyAddon(false);
    forwardDiagnostics(off, createLogger(undefined), { C2C_BRIDGE_LOG: '' });
    expect(off.sink()).toBeUndefined();
    const bad = spyAddon(Object.assign(new Error('invalid C2C_BRIDGE_LOG'), { code: 'E_INVALID_OPTION' }));
    const lines = [];
    const logger = { log: (l, m) => lines.push([l, m]), hostLog: () => {}, ready: () => {} };
    expect(() => forwardDiagnostics(bad, logger, { C2C_BRIDGE_LOG: 'c2c_bridge=[' })).not.toThrow();
    expect(bad.sink()).toBeUndefined();
    expect(lines).toEqual([['warn', 'C2C_BRIDGE_LOG ignored: invalid C2C_BRIDGE_LOG']]);
  });

  test.skipIf(!hasPython)('with the real addon, a lock timeout reaches client.app.log as warn', async () => {
    const root = fs.mkdtempSync(path.join(tmp, 'root-'));
    fs.chmodSync(root, 0o700);
    const lockFile = path.join(root, 'registry.json.lock');
    fs.writeFileSync(lockFile, '', { mode: 0o600 });
    const py = spawn('python3', ['-c',
      'import fcntl,os,sys\nf=os.open(sys.argv[1],os.O_RDWR)\nfcntl.lockf(f,fcntl.LOCK_EX)\nprint("locked",flush=True)\nsys.stdin.read()\n', lockFile],
    { stdio: ['pipe', 'pipe', 'inherit'] });
    try {
      await new Promise((resolve) => py.stdout.once('data', resolve));
      const { sent, client } = fakeClient();
      const logger = createLogger(client);
      logger.ready();
      forwardDiagnostics(addon, logger, { C2C_BRIDGE_LOG: 'c2c_bridge::store::lock=debug' });
      expect(addon.probeLock(root, 'registry.json', 100)).toBe(false);
      const line = await waitFor(() => sent.find((b) => b.message.includes('lock timeout')), { what: 'the timeout line' });
      expect(line.level).toBe('warn');
      expect(line.message).toContain('registry.json.lock');
    } finally {
      addon.setDiagnosticsSink(null);
      addon.initDiagnostics('off');
      py.stdin.end();
      await waitExit(py);
    }
  });
});

// Covers plugin/src/log.mts `HostLog` (through createLogger): under `opencode serve` each
// `client.app.log` is an HTTP request to OpenCode's own server, so lines go one request at a
// time and lines that queue up meanwhile are joined per run of one level (bench:memory).
describe('createLogger: lines to OpenCode go one request at a time', () => {
  /** A fake client whose requests stay open until released. */
  function gatedClient() {
    const sent = [];
    const open = [];
    return {
      sent,
      release: () => open.shift()?.(),
      client: { app: { log: ({ body }) => { sent.push(body); return new Promise((r) => open.push(r)); } } },
    };
  }
  const tick = () => new Promise((r) => setTimeout(r, 0));

  test('a burst is sent as one request per run of a level, in order; extra goes alone', async () => {
    const g = gatedClient();
    const logger = createLogger(g.client);
    logger.ready();
    logger.hostLog('info', 'a');
    logger.hostLog('info', 'b');
    logger.hostLog('info', 'c');
    logger.hostLog('warn', 'd');
    logger.log('info', 'e', { k: 1 });
    logger.hostLog('info', 'f');
    await tick();
    expect(g.sent.map((b) => b.message)).toEqual(['a']);
    for (let i = 0; i < 5; i++) {
      g.release();
      await tick();
    }
    expect(g.sent.map((b) => [b.level, b.message, b.extra])).toEqual([
      ['info', 'a', undefined],
      ['info', 'b\nc', undefined],
      ['warn', 'd', undefined],
      ['info', 'e', { k: 1 }],
      ['info', 'f', undefined],
    ]);
    expect(g.sent.every((b) => b.service === 'c2c-bridge')).toBe(true);
  });

  test('lines beyond the queue bound are counted and the count is logged', async () => {
    const g = gatedClient();
    const logger = createLogger(g.client);
    logger.ready();
    for (let i = 0; i < 1 + 1000 + 7; i++) logger.hostLog('info', `line ${i}`);
    for (let i = 0; i < 30; i++) {
      g.release();
      await tick();
    }
    const messages = g.sent.flatMap((b) => b.message.split('\n'));
    expect(messages.filter((m) => m.startsWith('line '))).toHaveLength(1001);
    expect(messages[1000]).toBe('line 1000');
    expect(g.sent.at(-1)).toMatchObject({ level: 'warn' });
    expect(g.sent.at(-1).message).toMatch(/^7 log line\(s\) were not sent/);
  });

  test('a request that never answers holds the next one back 5 s at most; a throwing client is survived', async () => {
    vi.useFakeTimers();
    try {
      const g = gatedClient();
      const logger = createLogger(g.client);
      logger.ready();
      logger.hostLog('info', 'stuck');
      logger.hostLog('warn', 'next');
      await vi.advanceTimersByTimeAsync(4900);
      expect(g.sent.map((b) => b.message)).toEqual(['stuck']);
      await vi.advanceTimersByTimeAsync(200);
      expect(g.sent.map((b) => b.message)).toEqual(['stuck', 'next']);
      const throwing = createLogger({ app: { log: () => { throw new Error('boom'); } } });
      throwing.ready();
      expect(() => { throwing.hostLog('info', 'x'); throwing.hostLog('info', 'y'); }).not.toThrow();
    } finally {
      vi.useRealTimers();
    }
  });
});
