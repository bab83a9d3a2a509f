// Covers plugin/src/supervisors.mts (c2c's M2/M4 advisory path): supervisors are told about a
// request left to OpenCode's prompt, with a pending-reply slot naming exactly them, and a
// checked reply becomes advice text only. threats.md "Permission authority": the DM says the
// decision is the requester's own; nothing here can answer a request.
import { describe, expect, test } from 'vitest';
import { adviceText, describeRequest, tellSupervisors } from '../../plugin/dist/supervisors.mjs';

function fakeBroker({ alias = 'worker', failFor = [] } = {}) {
  const slots = [];
  const sent = [];
  return {
    slots,
    sent,
    alias,
    openPendingReply(permId, kind, supervisors) {
      slots.push({ permId, kind, supervisors });
      return { ttlSeconds: 299.6 };
    },
    send(to, content) {
      if (failFor.includes(to)) throw Object.assign(new Error(`no ${to}`), { code: 'E_UNKNOWN_RECIPIENT' });
      sent.push({ to, content });
      return { messageId: `m-${sent.length}` };
    },
  };
}

const decision = { action: 'leave', reason: 'peer-turn/ask', requestId: 'per_42', sessionId: 'ses_1' };

describe('describeRequest', () => {
  test('the command or file, else up to five patterns, bounded to 500 characters', () => {
    expect(describeRequest({ permission: 'bash', metadata: { command: 'rm -rf build' } })).toEqual({ tool: 'bash', wants: 'command: rm -rf build' });
    expect(describeRequest({ permission: 'edit', metadata: { filepath: '/p/a.ts' } }).wants).toBe('file: /p/a.ts');
    expect(describeRequest({ action: 'webfetch', patterns: ['a', 'b', 'c', 'd', 'e', 'f'] })).toEqual({ tool: 'webfetch', wants: 'patterns: a, b, c, d, e' });
    expect(describeRequest({})).toEqual({ tool: 'unknown', wants: '(no details)' });
    expect(describeRequest({ permission: 'bash', metadata: { command: 'x'.repeat(900) } }).wants).toHaveLength(500);
  });
});

describe('tellSupervisors', () => {
  test('opens one slot naming the other supervisors and DMs each; the requester itself is skipped', () => {
    const b = fakeBroker();
    const logs = [];
    const reached = tellSupervisors(b, ['lead', 'WORKER', 'ops'], decision, { permission: 'bash', metadata: { command: 'make' } }, (l, m) => logs.push([l, m]));
    expect(reached).toEqual(['lead', 'ops']);
    expect(b.slots).toEqual([{ permId: 'per_42', kind: 'permission', supervisors: ['lead', 'ops'] }]);
    expect(b.sent.map((s) => s.to)).toEqual(['lead', 'ops']);
    const text = b.sent[0].content;
    expect(text).toContain('Permission request per_42 from worker: the bash tool wants to run (command: make).');
    expect(text).toContain("The decision is made in worker's own OpenCode prompt; nothing you send can approve or reject it.");
    expect(text).toContain('permission:per_42:approve-once | approve-always | reject (within 300 s)');
    expect(logs.at(-1)).toEqual(['info', 'permission per_42: supervisors told (lead, ops); the prompt decides']);
  });

  test('only itself as supervisor: no slot, no message', () => {
    const b = fakeBroker();
    expect(tellSupervisors(b, ['worker'], decision, {}, () => {})).toEqual([]);
    expect(b.slots).toEqual([]);
  });

  test('a supervisor that cannot be reached is logged and the others still are told', () => {
    const b = fakeBroker({ failFor: ['lead'] });
    const logs = [];
    expect(tellSupervisors(b, ['lead', 'ops'], decision, {}, (l, m) => logs.push([l, m]))).toEqual(['ops']);
    expect(logs.some(([l, m]) => l === 'warn' && m.includes('supervisor lead not told about per_42: E_UNKNOWN_RECIPIENT'))).toBe(true);
  });
});

describe('adviceText', () => {
  const item = (permissionReply) => ({ message: { messageId: 'm' }, framed: 'f', permissionReply });
  test('a checked reply is advice for the human, marked verified or not; anything else is nothing', () => {
    expect(adviceText(item({ permId: 'per_1', verdict: 'reject', fromAlias: 'lead', verified: true })))
      .toBe('c2c advice (verified supervisor lead): reject for permission per_1. Decide in OpenCode\'s prompt; this advice answers nothing.');
    expect(adviceText(item({ permId: 'per_1', verdict: 'approve-once', fromAlias: 'eve', verified: false }))).toContain('UNVERIFIED sender eve');
    expect(adviceText(item(undefined))).toBeUndefined();
    expect(adviceText(item(null))).toBeUndefined();
  });
});
