// Host safety (issue 12): the addon loaded in the main thread and in worker threads, torn down
// with live watches and callbacks that throw, never crashes the host: the process ends with its
// own exit code, no signal, no native abort. Runs under Node and under Bun (npm test runs this
// file on both).
import { spawn } from 'node:child_process';
import path from 'node:path';
import { describe, expect, test } from 'vitest';
import { HELPERS_DIR, RUNTIME } from '../helpers/broker.mjs';

function runChild(mode) {
  return new Promise((resolve) => {
    const child = spawn(RUNTIME, [path.join(HELPERS_DIR, 'host-child.cjs'), mode], { stdio: ['ignore', 'pipe', 'pipe'] });
    let out = '';
    let err = '';
    child.stdout.on('data', (d) => (out += d));
    child.stderr.on('data', (d) => (err += d));
    const timer = setTimeout(() => child.kill('SIGKILL'), 30_000);
    child.on('close', (code, signal) => {
      clearTimeout(timer);
      resolve({ code, signal, out, err });
    });
  });
}

describe('host safety', () => {
  for (const [mode, want] of [
    ['exit-7', 7],
    ['terminate-worker', 3],
    ['worker-throws', 5],
    ['natural', 0],
  ]) {
    test(`${mode}: exits with its own code (${want}), no signal, no native crash`, async () => {
      const r = await runChild(mode);
      expect(r.out).toMatch(/ready calls=[1-9]/);
      expect({ code: r.code, signal: r.signal }).toEqual({ code: want, signal: null });
      expect(r.err).not.toMatch(/FATAL|Abort|panicked|Segmentation|napi_fatal/i);
    });
  }
});
