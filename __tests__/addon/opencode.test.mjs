// Covers src/node/opencode.rs: the one "busy" rule of src/opencode/ (a session is busy unless
// its OpenCode status type is "idle"), exported so the plugin applies the same rule as Rust.
import { expect, test } from 'vitest';
import { addon } from '../helpers/broker.mjs';

test('sessionBusy: everything but idle is busy; no type is no observation', () => {
  expect(addon.sessionBusy({ type: 'idle' })).toBe(false);
  expect(addon.sessionBusy({ type: 'busy' })).toBe(true);
  expect(addon.sessionBusy({ type: 'retry', attempt: 1, message: 'rate limited', next: 5 })).toBe(true);
  // An unknown future type is not evidence of idleness (the safe side for injection and
  // for the turn index).
  expect(addon.sessionBusy({ type: 'compacting' })).toBe(true);
  for (const none of [{}, { type: '' }, { type: 3 }, null, 'idle']) {
    expect(addon.sessionBusy(none)).toBeNull();
  }
});
