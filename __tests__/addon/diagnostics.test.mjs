// Covers: developer diagnostics (`tracing`, `C2C_BRIDGE_LOG`) through the built addon, each
// case in a child process (the subscriber is process-wide): a lock timeout writes a trace line
// to stderr only when the variable is set; `setDiagnosticsSink` takes the lines instead of
// stderr; a bad filter is reported once and never stops the addon from loading.
import { describe, expect, test } from 'vitest';
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { REPO_DIR, RUNTIME, useBrokerFixtures, waitExit } from '../helpers/broker.mjs';

const fx = useBrokerFixtures();
const hasPython = spawnSync('python3', ['-c', 'import fcntl'], { stdio: 'ignore' }).status === 0;

// The child: probe the held registry lock (100 ms) and print {free, lines} on stdout. In
// `sink` mode the lines come through setDiagnosticsSink (delivered on the JS thread later).
const CHILD = `
const a = require(process.env.T_ADDON);
const lines = [];
if (process.env.T_MODE === 'sink') a.setDiagnosticsSink((l) => lines.push(l));
const free = a.probeLock(process.env.T_ROOT, 'registry.json', 100);
const end = Date.now() + 5000;
(function out() {
  if (process.env.T_MODE === 'sink' && !lines.some((l) => l.includes('lock timeout')) && Date.now() < end) {
    return setTimeout(out, 10);
  }
  a.setDiagnosticsSink(null);
  process.stdout.write(JSON.stringify({ free, lines }));
})();
`;

/** Run the child with `env` added; resolves {code, out, err}. */
async function child(root, env) {
  const base = { ...process.env };
  delete base.C2C_BRIDGE_LOG;
  const c = fx.track(spawn(RUNTIME, ['-e', CHILD], {
    env: { ...base, T_ADDON: path.join(REPO_DIR, 'index.js'), T_ROOT: root, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  }));
  let out = '';
  let err = '';
  c.stdout.on('data', (d) => { out += d; });
  c.stderr.on('data', (d) => { err += d; });
  const { code } = await waitExit(c);
  return { code, out: out ? JSON.parse(out) : null, err };
}

/** A root whose registry lock another process holds with lockf (as c2c does). */
async function heldRoot() {
  const root = fx.root();
  const lockFile = path.join(root, 'registry.json.lock');
  fs.writeFileSync(lockFile, '', { mode: 0o600 });
  const py = fx.track(spawn('python3', ['-c',
    'import fcntl,os,sys\nf=os.open(sys.argv[1],os.O_RDWR)\nfcntl.lockf(f,fcntl.LOCK_EX)\nprint("locked",flush=True)\nsys.stdin.read()\n', lockFile],
  { stdio: ['pipe', 'pipe', 'inherit'] }));
  await new Promise((resolve) => py.stdout.once('data', resolve));
  return root;
}

describe.skipIf(!hasPython)('C2C_BRIDGE_LOG', () => {
  test('unset: a lock timeout writes nothing to stderr', async () => {
    const r = await child(await heldRoot(), {});
    expect(r.code).toBe(0);
    expect(r.out.free).toBe(false);
    expect(r.err).toBe('');
  });

  test('debug: a lock timeout writes one WARN line naming the lock to stderr', async () => {
    const r = await child(await heldRoot(), { C2C_BRIDGE_LOG: 'debug' });
    expect(r.code).toBe(0);
    expect(r.out.free).toBe(false);
    const timeouts = r.err.split('\n').filter((l) => l.includes('lock timeout'));
    expect(timeouts).toHaveLength(1);
    expect(timeouts[0]).toMatch(/ WARN c2c_bridge::store::lock: lock timeout/);
    expect(timeouts[0]).toContain('registry.json.lock');
    expect(r.err).toContain('waiting');
    // No colours: a plain line for logs and terminals.
    expect(r.err).not.toContain('\u001b[');
  });

  test('a filter for another module hides the lock lines', async () => {
    const r = await child(await heldRoot(), { C2C_BRIDGE_LOG: 'c2c_bridge::policy=trace' });
    expect(r.out.free).toBe(false);
    expect(r.err).toBe('');
  });

  test('setDiagnosticsSink takes the lines instead of stderr', async () => {
    const r = await child(await heldRoot(), { C2C_BRIDGE_LOG: 'debug', T_MODE: 'sink' });
    expect(r.code).toBe(0);
    expect(r.err).toBe('');
    const timeouts = r.out.lines.filter((l) => l.includes('lock timeout'));
    expect(timeouts).toHaveLength(1);
    expect(timeouts[0]).toContain('registry.json.lock');
    expect(r.out.lines.every((l) => !l.endsWith('\n'))).toBe(true);
  });

  test('a bad filter is reported once at load, and the addon works', async () => {
    const r = await child(await heldRoot(), { C2C_BRIDGE_LOG: 'c2c_bridge=[' });
    expect(r.code).toBe(0);
    expect(r.out.free).toBe(false);
    const lines = r.err.split('\n').filter(Boolean);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toContain('C2C_BRIDGE_LOG');
  });
});

describe('initDiagnostics', () => {
  test('off by default, a bad filter is E_INVALID_OPTION', async () => {
    const script = `
      const a = require(process.env.T_ADDON);
      const off = a.initDiagnostics('');
      let code = null;
      try { a.initDiagnostics('c2c_bridge=['); } catch (e) { code = e.code; }
      process.stdout.write(JSON.stringify({ off, code, fromEnv: a.initDiagnostics() }));`;
    const base = { ...process.env };
    delete base.C2C_BRIDGE_LOG;
    const r = spawnSync(RUNTIME, ['-e', script], {
      env: { ...base, T_ADDON: path.join(REPO_DIR, 'index.js') },
      encoding: 'utf8',
    });
    expect(r.status).toBe(0);
    expect(JSON.parse(r.stdout)).toEqual({ off: false, code: 'E_INVALID_OPTION', fromEnv: false });
    expect(r.stderr).toBe('');
  });
});
