// Helpers of the CLI tests (__tests__/cli/): run bin/c2c-bridge.js as a subprocess with a
// clean c2c environment, and the broker fixtures of __tests__/helpers/broker.mjs.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { REPO_DIR, RUNTIME, sid, useBrokerFixtures } from '../helpers/broker.mjs';

export const BIN = path.join(REPO_DIR, 'bin', 'c2c-bridge.js');
export const VERSION = JSON.parse(fs.readFileSync(path.join(REPO_DIR, 'package.json'), 'utf8')).version;
/** `--json` output parsed. */
export const json = (r) => JSON.parse(r.stdout);
/** Any C0 control but \n, DEL, C1, bidi controls: nothing a terminal could act on. */
// eslint-disable-next-line no-control-regex
export const RAW_CONTROL = /[\u0000-\u0009\u000b-\u001f\u007f-\u009f\u202a-\u202e\u2066-\u2069]/;

/** The process environment without the c2c variables, plus `env`. */
export function cleanEnv(env = {}) {
  const base = { ...process.env };
  delete base.C2C_MCP_SESSION_ID;
  delete base.C2C_MCP_BROKER_ROOT;
  return { ...base, ...env };
}

/** Run the CLI to completion with a clean c2c environment plus `env`. */
export function cli(args, env = {}) {
  const r = spawnSync(RUNTIME, [BIN, ...args], { env: cleanEnv(env), encoding: 'utf8', timeout: 30000 });
  return { code: r.status, stdout: r.stdout, stderr: r.stderr };
}

/**
 * Per-file fixtures (call once at module level): `fx` (roots and brokers cleaned up after each
 * test), `cliAsync` (the CLI in the background; `done` resolves with { code, stdout, stderr }),
 * `setup()` (a root with alice and bob registered).
 */
export function useCli() {
  const fx = useBrokerFixtures();
  function cliAsync(args, env = {}) {
    const child = fx.track(spawn(RUNTIME, [BIN, ...args], { env: cleanEnv(env), stdio: ['ignore', 'pipe', 'pipe'] }));
    let stdout = '';
    let stderr = '';
    child.stdout.on('data', (d) => { stdout += d; });
    child.stderr.on('data', (d) => { stderr += d; });
    const done = new Promise((resolve) => child.on('close', (code) => resolve({ code, stdout, stderr })));
    return { child, done };
  }
  function setup() {
    const root = fx.root();
    const a = fx.open({ root, sessionId: sid('a'), alias: 'alice' });
    const b = fx.open({ root, sessionId: sid('b'), alias: 'bob' });
    return { root, a, b };
  }
  return { fx, cliAsync, setup };
}
