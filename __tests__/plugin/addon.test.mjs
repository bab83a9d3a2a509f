// Covers plugin/src/addon.mts: loading the native addon never throws (a failure is returned for
// the plugin to report), and a load failure is described by its most useful line.
import { describe, expect, test } from 'vitest';
import { describeLoadError, loadAddon } from '../../plugin/dist/addon.mjs';

describe('loadAddon', () => {
  test('loads the package entry (binding.js) with its Broker export', () => {
    const r = loadAddon();
    expect(r.ok).toBe(true);
    expect(typeof r.addon.Broker.open).toBe('function');
    expect(r.addon.nativeVersion()).toMatch(/^\d+\.\d+\.\d+/);
  });
});

describe('describeLoadError', () => {
  test("binding.js's own error (code C2C_…) is returned as it is", () => {
    const e = Object.assign(new Error('c2c-bridge 0.1.0: the prebuilt binary for linux-x64-gnu is missing'), { code: 'C2C_BINARY_MISSING' });
    expect(describeLoadError(e)).toBe(e.message);
  });

  test("napi-rs's generic error: the first line of each cause, the one naming the .node file first, deduplicated", () => {
    const inner = new Error('/x/c2c-bridge.linux-x64-gnu.node: invalid ELF header\n    at Module._extensions');
    const mid = new Error('Cannot find module c2c-bridge-linux-x64-gnu', { cause: inner });
    const top = new Error('Cannot find native binding. npm has a bug…\nmore text', { cause: mid });
    expect(describeLoadError(top)).toBe(
      '/x/c2c-bridge.linux-x64-gnu.node: invalid ELF header; Cannot find native binding. npm has a bug…; Cannot find module c2c-bridge-linux-x64-gnu',
    );
    const loop = new Error('same');
    expect(describeLoadError(new Error('same', { cause: loop }))).toBe('same');
  });

  test('a thrown non-Error and an empty one are still described', () => {
    expect(describeLoadError('dlopen failed')).toBe('dlopen failed');
    expect(describeLoadError(new Error(''))).toBe('unknown error');
    // an error with a code that is not ours is not trusted to be the whole report
    expect(describeLoadError(Object.assign(new Error('boom'), { code: 'ERR_DLOPEN_FAILED' }))).toBe('boom');
  });
});
