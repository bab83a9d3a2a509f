// Red team 3 (docs/redteam-2026-12.md), the busy race with a slow turn start, against real
// OpenCode 1.18.33: another plugin's `chat.message` hook takes longer than the plugin's
// STARTING_GRACE_MS (1 s) for the user's prompt (OpenCode awaits every plugin's hook before it
// stores the message and starts its loop, so the session's status stays idle meanwhile). A
// peer message arriving then must still not be stored while the user's turn runs: it must be
// answered as a turn of its own, stored after the user's turn completed.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { client, startMockModel, startOpencode, waitFor, REPO_ROOT } from './harness/index.mjs';

const addon = createRequire(import.meta.url)('../../index.js');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
/** How long the other plugin's chat.message hook takes for a prompt containing SLOW (ms). */
const SLOW_HOOK_MS = 3500;

describe('red team 3: a slow chat.message hook of another plugin', () => {
  let mock, oc, tmp, brokerRoot, alice;

  beforeAll(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'c2c-rt3-'));
    brokerRoot = path.join(tmp, 'broker');
    fs.mkdirSync(brokerRoot, { mode: 0o700 });
    const slow = path.join(tmp, 'slow-plugin.mjs');
    fs.writeFileSync(
      slow,
      `export const Slow = async () => ({
  'chat.message': async (_input, output) => {
    const text = (output?.parts ?? []).map((p) => p.text ?? '').join(' ');
    if (text.includes('SLOW')) await new Promise((r) => setTimeout(r, ${SLOW_HOOK_MS}));
  },
});
`,
    );
    mock = await startMockModel({
      script: (r) => {
        const text = r.lastUserText;
        if (text.includes('[c2c-frame')) return { text: 'peer noted.' };
        if (text.includes('USER')) return { text: 'user answered.', delayMs: 400 };
        return { text: 'ok.' };
      },
    });
    oc = await startOpencode({
      modelBaseURL: mock.baseURL('b'),
      plugins: [[REPO_ROOT, { alias: 'bob', brokerRoot }], slow],
    });
    alice = addon.Broker.open({ sessionId: 'ses_peer_alice_rt3', alias: 'alice', root: brokerRoot, directory: tmp, pid: process.pid });
  }, 120_000);

  afterAll(async () => {
    try {
      alice?.close();
    } catch {
      /* already closed */
    }
    await oc?.stop();
    await mock?.stop();
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  test('a peer message sent while the user\'s prompt is still being created waits for the user\'s turn to end', async () => {
    const c = client(oc);
    const s = await c.createSession({ title: 'slow start' });
    const reg = await waitFor(() => addon.listRegistrations(brokerRoot).find((r) => r.sessionId === s.id), { message: 'registration' });
    await c.promptAsync(s.id, 'warm up');
    await waitFor(async () => (await c.messages(s.id)).some((m) => m.info.role === 'assistant' && m.info.time?.completed), { message: 'warm-up answer' });
    await c.waitIdle(s.id);

    await c.promptAsync(s.id, 'USER SLOW prompt');
    await sleep(200);
    const sent = alice.send(reg.alias, 'PEER during a slow start');
    const [U, P] = await waitFor(
      async () => {
        const msgs = await c.messages(s.id);
        const u = msgs.find((m) => m.info.role === 'user' && m.parts.some((p) => p.type === 'text' && p.text === 'USER SLOW prompt'));
        const p = msgs.find((m) => m.info.role === 'user' && m.parts.some((x) => x.metadata?.peerMessage?.messageId === sent.messageId));
        if (!u || !p) return false;
        const answered = (id) => msgs.some((m) => m.info.role === 'assistant' && m.info.parentID === id && m.info.time?.completed);
        return answered(u.info.id) || answered(p.info.id) ? [u, p] : false;
      },
      { message: 'both messages stored and answered', timeoutMs: 60_000 },
    );
    await c.waitIdle(s.id, { timeoutMs: 30_000 });
    await sleep(50);
    const msgs = await c.messages(s.id);
    const userSteps = msgs.filter((m) => m.info.role === 'assistant' && m.info.parentID === U.info.id);
    console.log(`slow start: user created ${U.info.time.created}, peer created ${P.info.time.created}, user steps ${userSteps.map((m) => m.info.time.completed).join(',')}`);
    expect(P.info.time.created, 'the peer message was stored before the user\'s').toBeGreaterThan(U.info.time.created);
    expect(userSteps.length, "the user's message has its own answer").toBeGreaterThan(0);
    for (const step of userSteps) {
      expect(step.info.time.completed, "the peer message was stored while the user's turn ran").toBeLessThanOrEqual(P.info.time.created);
    }
    expect(msgs.some((m) => m.info.role === 'assistant' && m.info.parentID === P.info.id), 'the peer message has its own answer').toBe(true);
  }, 180_000);
});
