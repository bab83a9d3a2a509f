// Provenance end to end against real OpenCode 1.18.33 (issue 19: the user's own words are never
// decided by peer policy), in each `peerPermissions` mode:
//
// 1. The user types into a `task` child session while the parent's peer-triggered turn still
//    runs: the child's new turn is the user's (no reply; the request stays pending). The task's
//    own turn in the child still follows the mode (the control).
// 2. The user types into a session while a peer-triggered turn runs; OpenCode folds the message
//    into that turn: the plugin stops deciding for the rest of the turn (no reply).
//
// Peers are simulated with the addon (a Broker registered as "alice" in the shared root). The
// mock model reads the last user text: `TASK:{prompt}` runs the task tool (a `general` subagent
// whose prompt is `prompt`), `HOLD` keeps the parent's step after the task result streaming for
// a while, `SLOW:[ms]` answers after `ms` with a `glob` call (no permission needed), and
// `RUN:[cmd]` runs bash (`permission.bash = ask`).
//
// What OpenCode 1.18.33 showed (probe with this harness): the parent's `task` tool part, once the
// child exists and before the child's prompt is written, is updated to `state.status: "running"`
// with `state.metadata = {parentSessionId, sessionId: <child>, model}` and `state.time.start`; the
// completed part keeps the metadata and adds `state.time.end`. The gate links a child turn to
// the task call through that `sessionId` (src/provenance.rs).
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
/** How long the parent's step after a `HOLD` task keeps streaming (the parent turn runs on). */
const HOLD_MS = 6000;

/** The name of the tool a tool result answers, from the request's messages. */
function toolOfResult(r) {
  const id = r.lastMessage?.tool_call_id;
  for (const m of r.messages) {
    for (const c of m.tool_calls ?? []) if (c.id === id) return c.function?.name;
  }
  return undefined;
}

describe.each(['allow', 'ask', 'deny'])('provenance in real OpenCode, peerPermissions=%s', (mode) => {
  let mock, oc, tmp, brokerRoot, alice, t0;

  beforeAll(async () => {
    t0 = Date.now();
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), `c2c-prov-${mode}-`));
    brokerRoot = path.join(tmp, 'broker');
    fs.mkdirSync(brokerRoot, { mode: 0o700 });
    mock = await startMockModel({
      script: (r) => {
        const text = r.lastUserText;
        if (r.lastIsToolResult) {
          if (toolOfResult(r) === 'task' && text.includes('HOLD')) return { text: 'parent done.', delayMs: HOLD_MS };
          return { text: 'done.' };
        }
        const task = /TASK:\{([^}]+)\}/.exec(text);
        if (task) {
          return { toolCalls: [{ name: 'task', arguments: { description: 'sub job', prompt: task[1], subagent_type: 'general' } }] };
        }
        const slow = /SLOW:\[(\d+)\]/.exec(text);
        if (slow) return { toolCalls: [{ name: 'glob', arguments: { pattern: '*.nothing' } }], delayMs: Number(slow[1]) };
        const run = /RUN:\[([^\]]+)\]/.exec(text);
        if (run) return { toolCalls: [{ name: 'bash', arguments: { command: run[1], description: 'run it' } }] };
        return { text: 'nothing to do.' };
      },
    });
    oc = await startOpencode({
      modelBaseURL: mock.baseURL(mode),
      permission: { bash: 'ask', edit: 'ask' },
      plugins: [[REPO_ROOT, { alias: `bob-${mode}`, brokerRoot, peerPermissions: mode }]],
    });
    alice = addon.Broker.open({ sessionId: `ses_peer_alice_${mode}`, alias: 'alice', root: brokerRoot, directory: tmp, pid: process.pid });
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
    console.log(`provenance e2e (${mode}): ${Date.now() - t0} ms in total`);
  });

  /** A fresh registered session; returns its id, alias and an event stream. */
  async function session() {
    const c = client(oc);
    const events = await c.events();
    const s = await c.createSession({ title: 'prov' });
    const reg = await waitFor(() => addon.listRegistrations(brokerRoot).find((r) => r.sessionId === s.id), {
      message: 'registration',
    });
    return { c, events, sid: s.id, alias: reg.alias };
  }

  const askedIn = (sid) => (e) => e.type === 'permission.asked' && e.properties.sessionID === sid;
  const repliedTo = (id) => (e) => e.type === 'permission.replied' && e.properties.requestID === id;
  const taskPart = (sid, status) => (e) =>
    e.type === 'message.part.updated' &&
    e.properties.part.sessionID === sid &&
    e.properties.part.tool === 'task' &&
    e.properties.part.state?.status === status &&
    typeof e.properties.part.state?.metadata?.sessionId === 'string';

  function decision(requestId) {
    const f = path.join(brokerRoot, 'broker.log');
    if (!fs.existsSync(f)) return undefined;
    return fs
      .readFileSync(f, 'utf8')
      .trim()
      .split('\n')
      .map((l) => JSON.parse(l))
      .find((l) => l.event === 'permission_decision' && l.request === requestId);
  }

  /** The request must stay pending and unanswered (listed by GET /permission); then reject it. */
  async function expectPendingThenReject(s, id) {
    await sleep(PENDING_WATCH_MS);
    expect(s.events.list.some(repliedTo(id))).toBe(false);
    expect((await s.c.permissions()).map((p) => p.id)).toContain(id);
    await s.c.replyPermission(id, 'reject');
    await s.events.waitFor(repliedTo(id), { timeoutMs: 10_000 });
  }

  /** Wait until no session of the instance is busy (parent and children). */
  async function allIdle(s) {
    await waitFor(async () => Object.values((await s.c.sessionStatus()) ?? {}).every((st) => st.type === 'idle'), {
      timeoutMs: 30_000,
      message: 'all sessions idle',
    });
  }

  test('control: the task child of a peer turn follows the mode', async () => {
    const s = await session();
    alice.send(s.alias, `please TASK:{RUN:[touch child-peer-${mode}.txt]}`);
    const running = await s.events.waitFor(taskPart(s.sid, 'running'), { timeoutMs: 30_000 });
    const child = running.properties.part.state.metadata.sessionId;
    const asked = await s.events.waitFor(askedIn(child), { timeoutMs: 30_000 });
    const id = asked.properties.id;
    if (mode === 'ask') {
      await expectPendingThenReject(s, id);
    } else {
      const replied = await s.events.waitFor(repliedTo(id), { timeoutMs: 10_000 });
      expect(replied.properties.reply).toBe(mode === 'allow' ? 'once' : 'reject');
    }
    await allIdle(s);
    expect(fs.existsSync(path.join(oc.projectDir, `child-peer-${mode}.txt`))).toBe(mode === 'allow');
    expect(decision(id)).toMatchObject({
      provenance: 'peer',
      basis: 'peer-turn',
      inherited: true,
      mode,
      decision: { allow: 'once', ask: 'leave', deny: 'reject' }[mode],
    });
    await s.events.close();
  });

  test('item 1: the user typing into a task child while the peer parent runs is the user\'s turn', async () => {
    const s = await session();
    alice.send(s.alias, 'please HOLD TASK:{just say hello}');
    const done = await s.events.waitFor(taskPart(s.sid, 'completed'), { timeoutMs: 30_000 });
    const child = done.properties.part.state.metadata.sessionId;
    // The child is done and idle; the parent's peer-triggered turn still streams (HOLD).
    await s.c.waitIdle(child);
    const parentBusy = (await s.c.sessionStatus())?.[s.sid]?.type;
    expect(parentBusy).toBe('busy');
    const file = `user_in_child_${mode}.txt`;
    await s.c.promptAsync(child, `RUN:[touch ${file}]`);
    const asked = await s.events.waitFor(askedIn(child), { timeoutMs: 30_000 });
    // The parent was still running when the user's message was written.
    expect(s.events.list.some((e) => e.type === 'session.idle' && e.properties.sessionID === s.sid)).toBe(false);
    await expectPendingThenReject(s, asked.properties.id);
    expect(fs.existsSync(path.join(oc.projectDir, file))).toBe(false);
    expect(decision(asked.properties.id)).toMatchObject({
      provenance: 'local',
      basis: 'user-turn',
      inherited: false,
      mode,
      decision: 'leave',
      reason: 'local-turn',
    });
    await allIdle(s);
    await s.events.close();
  });

  test('item 2: a user message folded into a running peer turn is never decided by the plugin', async () => {
    const s = await session();
    alice.send(s.alias, 'please SLOW:[3000]');
    // The peer's first step exists and waits on the (slow) model: the turn is running.
    await s.events.waitFor(
      (e) => e.type === 'message.updated' && e.properties.info.sessionID === s.sid && e.properties.info.role === 'assistant',
      { timeoutMs: 30_000 },
    );
    const file = `user_typed_${mode}.txt`;
    await s.c.promptAsync(s.sid, `RUN:[touch ${file}]`);
    const asked = await s.events.waitFor(askedIn(s.sid), { timeoutMs: 30_000 });
    expect(asked.properties.metadata.command).toBe(`touch ${file}`);
    // Folded, not a new turn: the step that asks names the user's message as its parent, and
    // only one idle comes for the whole turn (checked below).
    await expectPendingThenReject(s, asked.properties.id);
    expect(fs.existsSync(path.join(oc.projectDir, file))).toBe(false);
    expect(decision(asked.properties.id)).toMatchObject({
      provenance: 'peer',
      basis: 'user-folded-into-peer-turn',
      folded: true,
      mode,
      decision: 'leave',
      reason: 'user-folded-into-peer-turn',
      from: 'alice',
    });
    await s.c.waitIdle(s.sid);
    expect(s.events.list.filter((e) => e.type === 'session.idle' && e.properties.sessionID === s.sid)).toHaveLength(1);
    await s.events.close();
  });

  test('item 4: a peer message right behind the user\'s prompt does not start a peer turn', async () => {
    const s = await session();
    // The user's prompt, then at once a peer-marked message (a foreign injector: the plugin's
    // own delivery re-checks the status first). OpenCode's first step names the newest message,
    // the peer's, as its parent; the user's message before it is still unanswered.
    // Sent concurrently: seen live, the user's message is written first, the peer's 160–230 ms
    // later, and the loop's one step names the peer's (the race). Either interleaving must
    // leave the request to the user.
    const userFile = `race_user_${mode}.txt`;
    const peerFile = `race_peer_${mode}.txt`;
    await Promise.all([
      s.c.promptAsync(s.sid, `RUN:[touch ${userFile}]`),
      s.c.promptAsync(s.sid, [
        {
          type: 'text',
          text: `RUN:[touch ${peerFile}]`,
          synthetic: true,
          metadata: { peerMessage: { messageId: `c2c_race_${mode}`, from: 'mallory', via: ['ses_mallory'] } },
        },
      ]),
    ]);
    const asked = await s.events.waitFor(askedIn(s.sid), { timeoutMs: 30_000 });
    const step = s.events.list.find(
      (e) => e.type === 'message.updated' && e.properties.info.id === asked.properties.tool.messageID,
    );
    const parent = s.events.list.find((e) => e.type === 'message.part.updated' && e.properties.part.messageID === step?.properties.info.parentID);
    const peerParent = Boolean(parent?.properties.part.metadata?.peerMessage);
    // Which message was written first (OpenCode's message ids ascend with creation).
    const peerPart = s.events.list.find((e) => e.type === 'message.part.updated' && e.properties.part.metadata?.peerMessage);
    const peerFirst = peerPart.properties.part.messageID < step.properties.info.parentID;
    console.log(`item 4 (${mode}): ${peerFirst ? 'peer' : 'user'} message first; the asking step's parent is the ${peerParent ? 'peer' : 'user'} message`);
    await expectPendingThenReject(s, asked.properties.id);
    expect(fs.existsSync(path.join(oc.projectDir, peerFile))).toBe(false);
    expect(fs.existsSync(path.join(oc.projectDir, userFile))).toBe(false);
    // Peer message behind the unanswered user message: the user's turn. User message behind
    // the unanswered peer message: a user message folded into a peer turn.
    // (If the user's message was first and its step came before the peer's message existed,
    // there was no race: the user's own turn.)
    expect(decision(asked.properties.id)).toMatchObject(
      peerParent
        ? { provenance: 'local', basis: 'user-turn', decision: 'leave', folded: true }
        : peerFirst
          ? { provenance: 'peer', basis: 'user-folded-into-peer-turn', decision: 'leave', folded: true }
          : { provenance: 'local', basis: 'user-turn', decision: 'leave' },
    );
    await s.c.waitIdle(s.sid);
    await s.events.close();
  });
});
