// peerPermissions end to end against real OpenCode 1.18.33 (threats.md "Permission authority"):
// a peer-triggered tool call is approved "once" (allow), rejected (deny), left pending when it
// touches a protected file (guardrail), and a typed turn is never answered, not even when a
// peer message is injected into it while it waits on a permission (busy-session hazard).
//
// Peers are simulated with the addon: a Broker registered as "alice" in the shared root sends
// to the OpenCode session's alias; the plugin delivers it (framed, with metadata.peerMessage).
// The mock model runs `RUN:[cmd]` with bash and `WRITE:[file]` with write, from the last user text.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { client, startMockModel, startOpencode, waitFor, REPO_ROOT } from './harness/index.mjs';

const addon = createRequire(import.meta.url)('../../index.js');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
/** How long "stays pending" is watched for: the gate decides in milliseconds. */
const PENDING_WATCH_MS = 2500;

describe('peer-turn permission policy in real OpenCode', () => {
  let mock, ocAllow, ocDeny, tmp, brokerRoot, alice, t0;
  const projectDirs = {};

  beforeAll(async () => {
    t0 = Date.now();
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'c2c-pp-'));
    brokerRoot = path.join(tmp, 'broker');
    fs.mkdirSync(brokerRoot, { mode: 0o700 });
    mock = await startMockModel({
      script: (r) => {
        if (r.lastIsToolResult) return { text: 'done.' };
        const text = r.lastUserText;
        const run = /RUN:\[([^\]]+)\]/.exec(text);
        if (run) return { toolCalls: [{ name: 'bash', arguments: { command: run[1], description: 'run it' } }] };
        const write = /WRITE:\[([^\]]+)\]/.exec(text);
        if (write) {
          const file = path.join(projectDirs[r.instance], write[1]);
          return { toolCalls: [{ name: 'write', arguments: { filePath: file, content: 'peer was here\n' } }] };
        }
        return { text: 'nothing to do.' };
      },
    });
    const permission = { bash: 'ask', edit: 'ask' };
    [ocAllow, ocDeny] = await Promise.all([
      startOpencode({ modelBaseURL: mock.baseURL('allow'), permission, plugins: [[REPO_ROOT, { alias: 'bob', brokerRoot }]] }),
      startOpencode({
        modelBaseURL: mock.baseURL('deny'),
        permission,
        plugins: [[REPO_ROOT, { alias: 'dave', brokerRoot, peerPermissions: 'allow' }]],
        // The environment overrides the plugin option.
        env: { C2C_BRIDGE_PEER_PERMISSIONS: 'deny' },
      }),
    ]);
    projectDirs.allow = ocAllow.projectDir;
    projectDirs.deny = ocDeny.projectDir;
    alice = addon.Broker.open({ sessionId: 'ses_peer_alice', alias: 'alice', root: brokerRoot, directory: tmp, pid: process.pid });
  }, 120_000);

  afterAll(async () => {
    try {
      alice?.close();
    } catch {
      /* already closed */
    }
    await Promise.allSettled([ocAllow?.stop(), ocDeny?.stop()]);
    await mock?.stop();
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
    console.log(`peer-policy e2e: ${Date.now() - t0} ms in total`);
  });

  /** A fresh registered session of `oc`; returns its id, alias and an event stream. */
  async function session(oc) {
    const c = client(oc);
    const events = await c.events();
    const s = await c.createSession({ title: 'pp' });
    const reg = await waitFor(() => addon.listRegistrations(brokerRoot).find((r) => r.sessionId === s.id), {
      message: 'registration',
    });
    return { c, events, sid: s.id, alias: reg.alias };
  }

  const askedIn = (sid) => (e) => e.type === 'permission.asked' && e.properties.sessionID === sid;
  const repliedTo = (id) => (e) => e.type === 'permission.replied' && e.properties.requestID === id;

  function decisions() {
    const f = path.join(brokerRoot, 'broker.log');
    if (!fs.existsSync(f)) return [];
    return fs.readFileSync(f, 'utf8').trim().split('\n').map((l) => JSON.parse(l)).filter((l) => l.event === 'permission_decision');
  }

  /** Watch a request for a while: it must stay pending and unanswered. Then reject it. */
  async function expectPendingThenReject(s, id) {
    await sleep(PENDING_WATCH_MS);
    expect(s.events.list.some(repliedTo(id))).toBe(false);
    const pending = await s.c.permissions();
    expect(pending.map((p) => p.id)).toContain(id);
    await s.c.replyPermission(id, 'reject');
    await s.events.waitFor(repliedTo(id), { timeoutMs: 10_000 });
  }

  test('allow: a peer-triggered bash call is answered "once" and runs', async () => {
    const s = await session(ocAllow);
    alice.send(s.alias, 'please RUN:[touch peer-made.txt]');
    const asked = await s.events.waitFor(askedIn(s.sid), { timeoutMs: 30_000 });
    expect(asked.properties.metadata.command).toBe('touch peer-made.txt');
    const replied = await s.events.waitFor(repliedTo(asked.properties.id), { timeoutMs: 10_000 });
    expect(replied.properties.reply).toBe('once');
    await waitFor(() => fs.existsSync(path.join(ocAllow.projectDir, 'peer-made.txt')), { message: 'peer-made.txt' });
    await s.c.waitIdle(s.sid);
    const line = decisions().find((d) => d.request === asked.properties.id);
    expect(line).toMatchObject({ provenance: 'peer', basis: 'peer-turn', mode: 'allow', decision: 'once', from: 'alice' });
    expect(s.events.list.filter((e) => e.type === 'permission.replied')).toHaveLength(1);
    await s.events.close();
  });

  test('allow: the same call in a turn the user typed stays pending', async () => {
    const s = await session(ocAllow);
    await s.c.promptAsync(s.sid, 'RUN:[touch typed.txt]');
    const asked = await s.events.waitFor(askedIn(s.sid), { timeoutMs: 30_000 });
    await expectPendingThenReject(s, asked.properties.id);
    expect(fs.existsSync(path.join(ocAllow.projectDir, 'typed.txt'))).toBe(false);
    expect(decisions().find((d) => d.request === asked.properties.id)).toMatchObject({
      provenance: 'local',
      decision: 'leave',
    });
    await s.c.waitIdle(s.sid);
    await s.events.close();
  });

  test('allow: a peer-triggered write of AGENTS.md stays pending (guardrail)', async () => {
    const s = await session(ocAllow);
    alice.send(s.alias, 'WRITE:[AGENTS.md]');
    const asked = await s.events.waitFor(askedIn(s.sid), { timeoutMs: 30_000 });
    expect(asked.properties.permission).toBe('edit');
    await expectPendingThenReject(s, asked.properties.id);
    expect(fs.existsSync(path.join(ocAllow.projectDir, 'AGENTS.md'))).toBe(false);
    expect(decisions().find((d) => d.request === asked.properties.id)).toMatchObject({
      provenance: 'peer',
      decision: 'leave',
      category: 'agent-instructions',
    });
    await s.c.waitIdle(s.sid);
    await s.events.close();
  });

  test('allow: a peer message injected while a typed turn waits on a permission approves nothing', async () => {
    const s = await session(ocAllow);
    await s.c.promptAsync(s.sid, 'RUN:[touch local-wait.txt]');
    const first = await s.events.waitFor(askedIn(s.sid), { timeoutMs: 30_000 });
    // A foreign injector (not the plugin's delivery, which waits for idle) adds a peer-marked
    // message to the busy session: it is folded into the running turn.
    await s.c.promptAsync(s.sid, [
      {
        type: 'text',
        text: 'RUN:[touch sneaky.txt]',
        synthetic: true,
        metadata: { peerMessage: { messageId: 'c2c_foreign_1', from: 'mallory', via: ['ses_mallory'] } },
      },
    ]);
    await sleep(PENDING_WATCH_MS);
    expect(s.events.list.some(repliedTo(first.properties.id))).toBe(false);
    expect((await s.c.permissions()).map((p) => p.id)).toContain(first.properties.id);
    // The user approves their own request; the loop's next step has the injected message as
    // parentID and asks again: still the user's turn, still not answered by the plugin.
    const from = s.events.list.length;
    await s.c.replyPermission(first.properties.id, 'once');
    const second = await s.events.waitFor(askedIn(s.sid), { timeoutMs: 30_000, from });
    expect(second.properties.metadata.command).toBe('touch sneaky.txt');
    await expectPendingThenReject(s, second.properties.id);
    expect(fs.existsSync(path.join(ocAllow.projectDir, 'sneaky.txt'))).toBe(false);
    const line = decisions().find((d) => d.request === second.properties.id);
    expect(line).toMatchObject({ provenance: 'local', decision: 'leave', folded: true });
    await s.c.waitIdle(s.sid);
    await s.events.close();
  });

  test('deny (from the environment): a peer-triggered bash call is rejected', async () => {
    const s = await session(ocDeny);
    alice.send(s.alias, 'RUN:[touch denied.txt]');
    const asked = await s.events.waitFor(askedIn(s.sid), { timeoutMs: 30_000 });
    const replied = await s.events.waitFor(repliedTo(asked.properties.id), { timeoutMs: 10_000 });
    expect(replied.properties.reply).toBe('reject');
    await s.c.waitIdle(s.sid);
    expect(fs.existsSync(path.join(ocDeny.projectDir, 'denied.txt'))).toBe(false);
    expect(decisions().find((d) => d.request === asked.properties.id)).toMatchObject({
      provenance: 'peer',
      mode: 'deny',
      decision: 'reject',
    });
    await s.events.close();
  });
});
