// Diagnostics (`C2C_BRIDGE_LOG`) against real OpenCode 1.18.33: with the variable set, the
// core's tracing lines reach OpenCode's own log through the plugin (`client.app.log`), here
// the inbound-gate decision for a peer message; without it, none. broker.log keeps its audit
// lines either way. (Troubleshooting, README; the lines' content: tests/diagnostics.rs.)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { client, startMockModel, startOpencode, waitFor, REPO_ROOT } from './harness/index.mjs';

const addon = createRequire(import.meta.url)('../../index.js');

let mock;
const cleanups = [];
beforeAll(async () => {
  mock = await startMockModel({ script: () => ({ text: 'ok.' }) });
}, 60_000);
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => {});
  await mock?.stop();
});

/** Start OpenCode with the plugin and `env`, deliver one peer message; return the server log. */
async function deliverOne(env, tag) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'c2c-diag-'));
  cleanups.push(async () => fs.rmSync(tmp, { recursive: true, force: true }));
  const brokerRoot = path.join(tmp, 'broker');
  fs.mkdirSync(brokerRoot, { mode: 0o700 });
  const oc = await startOpencode({
    modelBaseURL: mock.baseURL(tag),
    plugins: [[REPO_ROOT, { alias: 'bob', brokerRoot }]],
    env,
  });
  cleanups.push(() => oc.stop());
  const alice = addon.Broker.open({ sessionId: `ses_diag_alice_${tag}`, alias: 'alice', root: brokerRoot, directory: tmp, pid: process.pid });
  cleanups.push(async () => alice.close());
  const c = client(oc);
  const s = await c.createSession({ title: 'diag' });
  const reg = await waitFor(() => addon.listRegistrations(brokerRoot).find((r) => r.sessionId === s.id), { message: 'registration' });
  const sent = alice.send(reg.alias, 'hello from alice');
  // Delivered: the framed message is in the session.
  await waitFor(async () => (await c.messages(s.id)).some((m) => JSON.stringify(m.parts).includes('hello from alice')), {
    message: 'delivery', timeoutMs: 30_000,
  });
  await c.waitIdle(s.id);
  return { oc, sent, brokerRoot };
}

describe('C2C_BRIDGE_LOG in OpenCode', () => {
  test('set: the inbound-gate decision is in OpenCode\'s log', async () => {
    const { oc, sent } = await deliverOne({ C2C_BRIDGE_LOG: 'c2c_bridge::broker=debug' }, 'on');
    const line = await waitFor(
      () => oc.logs().split('\n').find((l) => l.includes('c2c_bridge::broker::gate: inbound gate') && l.includes(sent.messageId)),
      { message: 'the gate line in OpenCode\'s log', timeoutMs: 15_000 },
    );
    // OpenCode 1.18.33 prints `client.app.log` lines as `timestamp=… level=INFO run=… message="…"`.
    expect(line).toMatch(/^timestamp=\S+ level=INFO .*message=".* DEBUG c2c_bridge::broker::gate: inbound gate /);
    expect(line).toContain('decision=Accept');
    // Forwarded to OpenCode's log only, not also printed by the plugin on stderr.
    expect(oc.logs().split('\n').filter((l) => l.startsWith('[c2c-bridge]') && l.includes('inbound gate'))).toEqual([]);
  });

  test('unset: no diagnostic line, and broker.log is the same audit format', async () => {
    const { oc, brokerRoot } = await deliverOne({}, 'off');
    expect(oc.logs()).not.toMatch(/c2c_bridge::/);
    for (const l of fs.readFileSync(path.join(brokerRoot, 'broker.log'), 'utf8').trim().split('\n')) {
      expect(() => JSON.parse(l)).not.toThrow();
    }
  });
});
