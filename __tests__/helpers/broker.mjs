// Shared test helpers: the addon, throw-away broker roots, child processes.
//
// Every test gets a fresh 0700 temp root that is removed after it; every Broker handle opened
// through `open()` is closed after the test so no watcher outlives it.
import { createRequire } from 'node:module';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterEach } from 'vitest';

const require = createRequire(import.meta.url);
export const addon = require('../../index.js');
export const { Broker } = addon;

export const HELPERS_DIR = path.dirname(fileURLToPath(import.meta.url));
export const REPO_DIR = path.resolve(HELPERS_DIR, '../..');
/** The runtime running the tests (node, or bun under `bun --bun`); children use the same. */
export const RUNTIME = process.execPath;

/**
 * Register per-test cleanup and return helpers bound to it:
 * `root()` makes a fresh 0700 root, `open(opts)` opens a Broker on it (closed after the test),
 * `spawned` children are killed after the test.
 */
export function useBrokerFixtures() {
  const roots = [];
  const handles = [];
  const children = [];
  afterEach(() => {
    for (const h of handles.splice(0)) {
      try { h.close(); } catch { /* already closed or registration gone */ }
    }
    for (const c of children.splice(0)) {
      if (c.exitCode === null && c.signalCode === null) c.kill('SIGKILL');
    }
    for (const r of roots.splice(0)) {
      try { fs.chmodSync(r, 0o700); } catch { /* removed by the test */ }
      fs.rmSync(r, { recursive: true, force: true });
    }
  });
  return {
    root() {
      const r = fs.mkdtempSync(path.join(os.tmpdir(), 'c2c-bridge-test-'));
      fs.chmodSync(r, 0o700);
      roots.push(r);
      return r;
    },
    open(opts) {
      const b = Broker.open(opts);
      handles.push(b);
      return b;
    },
    track(child) {
      children.push(child);
      return child;
    },
  };
}

let counter = 0;
/** A session id unique within this test run. */
export function sid(prefix = 'ses') {
  counter += 1;
  return `${prefix}_${process.pid}_${counter}_${Math.random().toString(36).slice(2, 8)}`;
}

/** Call `fn` and return the error it throws (fails when it does not throw). */
export function catchErr(fn) {
  try {
    fn();
  } catch (e) {
    return e;
  }
  throw new Error('expected an error, none was thrown');
}

/** The pid of a process that has already exited (for dead registrations). */
export async function deadPid() {
  const child = spawn(RUNTIME, ['-e', ''], { stdio: 'ignore' });
  const pid = child.pid;
  await new Promise((resolve) => child.on('exit', resolve));
  // /proc/<pid> disappears once the parent has reaped the child (done by 'exit').
  for (let i = 0; i < 100 && fs.existsSync(`/proc/${pid}`); i++) await sleep(10);
  return pid;
}

/** A long-lived process whose pid can stand for a live peer; kill it to make the peer die. */
export function holderProcess() {
  const child = spawn(RUNTIME, ['-e', 'setInterval(() => {}, 1000)'], { stdio: 'ignore' });
  return child;
}

export function waitExit(child) {
  if (child.exitCode !== null || child.signalCode !== null) {
    return Promise.resolve({ code: child.exitCode, signal: child.signalCode });
  }
  return new Promise((resolve) => child.on('exit', (code, signal) => resolve({ code, signal })));
}

export const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

/** Poll `fn` until it returns a truthy value or `timeoutMs` passes; returns the value. */
export async function waitFor(fn, { timeoutMs = 10000, intervalMs = 20, what = 'condition' } = {}) {
  const end = Date.now() + timeoutMs;
  for (;;) {
    const v = fn();
    if (v) return v;
    if (Date.now() > end) throw new Error(`timed out waiting for ${what}`);
    await sleep(intervalMs);
  }
}

/**
 * Start `__tests__/helpers/peer.mjs` with a JSON plan. The child prints one JSON object per
 * line on stdout; `next(event)` resolves with the next line whose `event` matches.
 */
export function spawnPeer(plan) {
  const child = spawn(RUNTIME, [path.join(HELPERS_DIR, 'peer.mjs'), JSON.stringify(plan)], {
    stdio: ['pipe', 'pipe', 'pipe'],
    cwd: REPO_DIR,
  });
  const lines = [];
  const waiters = [];
  let buf = '';
  let stderr = '';
  child.stderr.on('data', (d) => { stderr += d; });
  child.stdout.on('data', (d) => {
    buf += d;
    let i;
    while ((i = buf.indexOf('\n')) >= 0) {
      const line = buf.slice(0, i);
      buf = buf.slice(i + 1);
      if (!line.trim()) continue;
      let msg;
      try { msg = JSON.parse(line); } catch { msg = { event: 'raw', line }; }
      lines.push(msg);
      for (const w of waiters.slice()) {
        if (w.match(msg)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(msg);
        }
      }
    }
  });
  // 'close' (not 'exit'): it fires after stdout has been read to the end.
  const exited = new Promise((resolve) => child.on('close', (code, signal) => resolve({ code, signal })));
  child.next = (event, timeoutMs = 20000) => {
    const match = (m) => m.event === event || m.event === 'error';
    const seen = lines.find(match);
    if (seen) {
      lines.splice(lines.indexOf(seen), 1);
      return seen.event === 'error' ? Promise.reject(new Error(`peer error: ${JSON.stringify(seen)}`)) : Promise.resolve(seen);
    }
    return new Promise((resolve, reject) => {
      const timer = setTimeout(() => reject(new Error(`peer: no "${event}" within ${timeoutMs} ms; stderr: ${stderr}`)), timeoutMs);
      const w = {
        match,
        resolve: (m) => {
          clearTimeout(timer);
          const i = lines.indexOf(m);
          if (i >= 0) lines.splice(i, 1);
          if (m.event === 'error') reject(new Error(`peer error: ${JSON.stringify(m)}`));
          else resolve(m);
        },
      };
      waiters.push(w);
      exited.then(({ code, signal }) => {
        if (waiters.includes(w)) {
          clearTimeout(timer);
          reject(new Error(`peer exited (${code ?? signal}) before "${event}"; stderr: ${stderr}`));
        }
      });
    });
  };
  child.exited = exited;
  child.stderrText = () => stderr;
  return child;
}
