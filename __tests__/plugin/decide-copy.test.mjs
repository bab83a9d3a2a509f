// Issue 16: `PermissionGate.decide` copies only what the decision reads out of JavaScript (the
// request's fields for its kind, the tool input's guardrail keys). These pin that the copy
// decides exactly as the whole objects did: a null `command` argument still leaves the request
// (the guardrail cannot read it), extra keys change nothing, a non-object tool input counts as
// unknown, a non-object request is malformed, and every decision still writes its audit line.
import { afterAll, expect, test } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';

const addon = createRequire(import.meta.url)('../../index.js');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'c2c-decide-copy-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

let seq = 0;
/** A gate whose session ses_1 has a peer-triggered turn (assistant step msg_step). */
function peerTurnGate() {
  const dir = path.join(tmp, `p${++seq}`);
  fs.mkdirSync(path.join(dir, 'build'), { recursive: true });
  const brokerRoot = path.join(tmp, `b${seq}`);
  const gate = new addon.PermissionGate({ peerPermissions: 'allow', directory: dir, brokerRoot, startedAtMs: 0 });
  const t0 = Date.now() - 1_000_000;
  gate.observe({ type: 'session.created', properties: { info: { id: 'ses_1', time: { created: t0 - 1000 } } } });
  gate.observe({ type: 'message.updated', properties: { info: { id: 'msg_peer', sessionID: 'ses_1', role: 'user', time: { created: t0 } } } });
  gate.observe({ type: 'message.part.updated', properties: { part: { id: 'prt_1', sessionID: 'ses_1', messageID: 'msg_peer', type: 'text', text: 'x', synthetic: true, metadata: { peerMessage: { messageId: 'm1', from: 'peer', via: ['ses_x'] } } } } });
  gate.observe({ type: 'message.updated', properties: { info: { id: 'msg_step', sessionID: 'ses_1', role: 'assistant', parentID: 'msg_peer', time: { created: t0 + 10 } } } });
  return { gate, dir, log: path.join(brokerRoot, 'broker.log') };
}

const bash = (id, extra = {}) => ({ id, sessionID: 'ses_1', permission: 'bash', patterns: ['touch build/out.txt'], metadata: { command: 'touch build/out.txt' }, always: ['touch *'], tool: { messageID: 'msg_step', callID: 'call_1' }, ...extra });

test('a confined bash call of a peer turn is answered once, whatever else the objects hold', () => {
  const { gate, log } = peerTurnGate();
  const plain = gate.decide('asked', bash('per_1'), { command: 'touch build/out.txt' });
  expect(plain.action).toBe('once');
  // unread keys, however large or exotic, change nothing (and are not converted: a function
  // in an unread key used to make the whole conversion throw)
  const noisy = gate.decide(
    'asked',
    bash('per_2', { metadata: { command: 'touch build/out.txt', diff: 'x'.repeat(1 << 20), cb: () => 1 }, extra: Symbol('s') }),
    { command: 'touch build/out.txt', description: 'y'.repeat(1 << 20), onDone: () => 1 },
  );
  expect(noisy.action).toBe('once');
  expect(noisy.reason).toBe(plain.reason);
  const lines = fs.readFileSync(log, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
  expect(lines.filter((l) => l.event === 'permission_decision').map((l) => l.request)).toEqual(['per_1', 'per_2']);
});

test('a null command argument still leaves the request (the guardrail cannot read it)', () => {
  const { gate } = peerTurnGate();
  const d = gate.decide('asked', bash('per_1'), { command: null });
  expect(d.action).toBe('leave');
  expect(d.reason).toBe('peer-turn/allow/guardrail');
  expect(d.guardrailReason).toMatch(/not a string/);
});

test('a workdir argument is read: a write from $HOME is left', () => {
  const { gate } = peerTurnGate();
  const d = gate.decide('asked', bash('per_1', { patterns: ['touch .bashrc'], metadata: { command: 'touch .bashrc' } }), { command: 'touch .bashrc', workdir: os.homedir() });
  expect(d.action).toBe('leave');
});

test('a tool input that is not a plain object counts as unknown (need-message, then left)', () => {
  for (const input of [['touch build/out.txt'], 'touch build/out.txt', 7]) {
    const { gate } = peerTurnGate();
    const first = gate.decide('asked', bash('per_1'), input);
    expect(first.action).toBe('need-message');
    const second = gate.decide('asked', bash('per_1'), input);
    expect(second.action).toBe('leave');
    expect(second.reason).toBe('peer-turn/allow/tool-args-unavailable');
  }
});

test('a request that is not a plain object is malformed; the v2 shape reads its own fields', () => {
  const { gate } = peerTurnGate();
  for (const r of [null, [bash('per_1')], 'per_1']) {
    const d = gate.decide('asked', r);
    expect(d.action).toBe('leave');
    expect(d.reason).toBe('malformed-request');
  }
  // v2: `action`, `resources`, `source` (not `permission`, `patterns`, `tool`)
  const v2 = gate.decide('v2', { id: 'per_v2', sessionID: 'ses_1', action: 'bash', resources: ['touch build/out.txt'], metadata: { command: 'touch build/out.txt' }, source: { messageID: 'msg_step', callID: 'call_1' } }, { command: 'touch build/out.txt' });
  expect(v2.action).toBe('once');
  const v2AskedFields = gate.decide('v2', { ...bash('per_v2b') }, { command: 'touch build/out.txt' });
  expect(v2AskedFields.action).not.toBe('once');
});
