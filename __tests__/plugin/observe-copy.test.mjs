// Issue 16: `PermissionGate.observe` copies only what the decoder reads out of JavaScript
// (`opencode::EVENT_FIELDS`): a streaming part's text, a tool's file content, anything unread
// is never converted. These pin that the copied event still gives the gate the same facts (a
// peer mark, a tool call's arguments) and that unread keys are never touched: a getter that
// throws on them would otherwise break the event.
import { afterAll, expect, test } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';

const addon = createRequire(import.meta.url)('../../index.js');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'c2c-observe-copy-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

/** `obj` with a getter at `key` that throws when read (so the test fails if it is copied). */
function untouchable(obj, key) {
  Object.defineProperty(obj, key, { enumerable: true, get() { throw new Error(`${key} was read`); } });
  return obj;
}

let seq = 0;
/** A gate in which ses_1 has user message msg_peer and its assistant step msg_step; `peerPart`
 * is the text part observed for msg_peer (or none). */
function gateWith(peerPart) {
  const dir = path.join(tmp, `p${++seq}`);
  fs.mkdirSync(path.join(dir, 'build'), { recursive: true });
  const gate = new addon.PermissionGate({ peerPermissions: 'allow', directory: dir, brokerRoot: path.join(tmp, `b${seq}`), startedAtMs: 0 });
  const t0 = Date.now() - 1_000_000;
  gate.observe({ type: 'session.created', properties: { info: { id: 'ses_1', title: untouchable({}, 'x'), time: { created: t0 - 1000 } } } });
  gate.observe({ type: 'message.updated', properties: { info: untouchable({ id: 'msg_peer', sessionID: 'ses_1', role: 'user', time: { created: t0 }, summary: { diffs: [{ patch: 'p'.repeat(1 << 16) }] } }, 'agent') } });
  if (peerPart) gate.observe({ type: 'message.part.updated', properties: { part: peerPart } });
  gate.observe({ type: 'message.updated', properties: { info: { id: 'msg_step', sessionID: 'ses_1', role: 'assistant', parentID: 'msg_peer', time: { created: t0 + 10 } } } });
  return gate;
}

const peerPart = () => ({ id: 'prt_1', sessionID: 'ses_1', messageID: 'msg_peer', type: 'text', text: 'x', synthetic: true, metadata: { peerMessage: { messageId: 'm1', from: 'peer', via: ['ses_x'] } } });
const bash = (id, command, callID = 'call_1') => ({ id, sessionID: 'ses_1', permission: 'bash', patterns: [command], metadata: { command }, tool: { messageID: 'msg_step', callID } });

test('a peer part is seen through the copy; its text and unread keys are never read', () => {
  const plain = gateWith(peerPart()).decide('asked', bash('per_1', 'touch build/out.txt'), { command: 'touch build/out.txt' });
  expect(plain.action).toBe('once');
  expect(plain.reason).toBe('peer-turn/allow');
  const noisy = untouchable(peerPart(), 'text');
  noisy.metadata.cb = () => 1;
  noisy.metadata.peerMessage.extra = Symbol('s');
  untouchable(noisy.metadata, 'other');
  const d = gateWith(noisy).decide('asked', bash('per_1', 'touch build/out.txt'), { command: 'touch build/out.txt' });
  expect(d).toEqual(plain);
  // without the peer part the same turn is the user's (the peer mark above was really read)
  expect(gateWith(null).decide('asked', bash('per_1', 'touch build/out.txt'), { command: 'touch build/out.txt' }).reason).toBe('local-turn');
});

test("a running tool part's guardrail arguments are kept, its file content is not read", () => {
  for (const [command, action] of [['touch build/out.txt', 'once'], ['touch ~/.bashrc', 'leave']]) {
    const gate = gateWith(peerPart());
    const input = untouchable({ command, description: () => 'fn' }, 'content');
    gate.observe({ type: 'message.part.updated', properties: { part: untouchable({ id: 'prt_t', sessionID: 'ses_1', messageID: 'msg_step', type: 'tool', callID: 'call_9', tool: 'bash', state: untouchable({ status: 'running', input, time: { start: 1 } }, 'output') }, 'text') } });
    // no tool input given: the gate uses the one it observed
    const d = gate.decide('asked', bash('per_1', command, 'call_9'));
    expect(d.action).toBe(action);
  }
});

test('streaming text parts and events of other types are ignored without being read', () => {
  const gate = gateWith(peerPart());
  gate.observe({ type: 'message.part.updated', properties: { part: untouchable({ id: 'prt_s', sessionID: 'ses_1', messageID: 'msg_step', type: 'text' }, 'text') } });
  gate.observe(untouchable({ type: 'message.part.delta', properties: {} }, 'delta'));
  gate.observe({ type: 'session.status', properties: { sessionID: 'ses_1', status: untouchable({ type: 'idle' }, 'message') } });
  for (const bad of [null, 7, 'x', [], { type: 3 }, { type: 'message.updated', properties: [] }]) gate.observe(bad);
  expect(gate.decide('asked', bash('per_1', 'touch build/out.txt'), { command: 'touch build/out.txt' }).action).toBe('once');
});
