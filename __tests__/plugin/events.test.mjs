// Covers plugin/src/events.mts: the plugin's one decoder of OpenCode 1.18.33 events and its one
// busy rule (session.status events and GET /session/status alike; busy is busy or retry, as
// the Rust core reads it; an unknown status type holds delivery).
import { describe, expect, test } from 'vitest';
import { busyInStatusMap, decodeEvent, isBusyStatus, isPeerPart, peerMessageIdOf, permissionKind } from '../../plugin/dist/events.mjs';

const ev = (type, properties = {}) => ({ type, properties });

describe('the busy rule', () => {
  test('idle is idle; busy and retry (a model call to be retried) are busy; an unknown type holds delivery', () => {
    expect(['idle', 'busy', 'retry', 'compacting'].map(isBusyStatus)).toEqual([false, true, true, true]);
  });

  test('GET /session/status: absent sessions are idle, no map is unknown', () => {
    const map = { s1: { type: 'busy' }, s2: { type: 'retry', attempt: 2 }, s3: { type: 'idle' } };
    expect(['s1', 's2', 's3', 'gone'].map((s) => busyInStatusMap(map, s))).toEqual([true, true, false, false]);
    expect(busyInStatusMap(undefined, 's1')).toBeUndefined();
  });

  test('session.status and session.idle decode to the same status fact', () => {
    expect(decodeEvent(ev('session.status', { sessionID: 's', status: { type: 'retry', attempt: 1, message: 'x', next: 1 } })))
      .toEqual({ kind: 'status', sessionId: 's', busy: true });
    expect(decodeEvent(ev('session.status', { sessionID: 's', status: { type: 'idle' } })))
      .toEqual({ kind: 'status', sessionId: 's', busy: false });
    expect(decodeEvent(ev('session.idle', { sessionID: 's' }))).toEqual({ kind: 'status', sessionId: 's', busy: false });
    // without a session or a type there is nothing to record
    expect(decodeEvent(ev('session.status', { sessionID: 's' }))).toEqual({ kind: 'other' });
    expect(decodeEvent(ev('session.status', { status: { type: 'busy' } }))).toEqual({ kind: 'other' });
  });
});

describe('decodeEvent', () => {
  test('sessions: created (a new session starts idle), updated, deleted', () => {
    const info = { id: 'ses_1', parentID: 'ses_0' };
    expect(decodeEvent(ev('session.created', { info }))).toEqual({ kind: 'session', info, created: true });
    expect(decodeEvent(ev('session.updated', { info }))).toEqual({ kind: 'session', info, created: false });
    expect(decodeEvent(ev('session.deleted', { info }))).toEqual({ kind: 'session-deleted', sessionId: 'ses_1' });
    expect(decodeEvent(ev('session.created', { info: {} }))).toEqual({ kind: 'other' });
  });

  test('a stored part is a delivery only when it carries our peerMessage mark', () => {
    const part = { id: 'p', sessionID: 's', messageID: 'm', type: 'text', metadata: { peerMessage: { messageId: 'c2c-1' } } };
    expect(decodeEvent(ev('message.part.updated', { part })))
      .toEqual({ kind: 'peer-part-stored', sessionId: 's', peerMessageId: 'c2c-1', messageId: 'm' });
    expect(decodeEvent(ev('message.part.updated', { part: { ...part, metadata: {} } }))).toEqual({ kind: 'other' });
    expect(decodeEvent(ev('message.part.updated', { part: { ...part, metadata: { peerMessage: { messageId: 7 } } } }))).toEqual({ kind: 'other' });
    expect(peerMessageIdOf(part)).toBe('c2c-1');
    expect(isPeerPart(part)).toBe(true);
    expect(isPeerPart({ metadata: { other: 1 } })).toBe(false);
    expect(isPeerPart(undefined)).toBe(false);
  });

  test("an assistant message answers its parent; completed and aborted are read from OpenCode's fields", () => {
    const info = { id: 'a', sessionID: 's', role: 'assistant', parentID: 'u', time: { completed: 5 } };
    expect(decodeEvent(ev('message.updated', { info })))
      .toEqual({ kind: 'answer', sessionId: 's', parentId: 'u', completed: true, failed: false });
    expect(decodeEvent(ev('message.updated', { info: { ...info, time: {}, error: { name: 'MessageAbortedError' } } })))
      .toEqual({ kind: 'answer', sessionId: 's', parentId: 'u', completed: false, failed: true });
    // A user message is its own fact (the busy mark); without its ids it is nothing.
    expect(decodeEvent(ev('message.updated', { info: { ...info, role: 'user' } })))
      .toEqual({ kind: 'user-message', sessionId: 's', messageId: 'a' });
    expect(decodeEvent(ev('message.updated', { info: { role: 'user', sessionID: 's' } }))).toEqual({ kind: 'other' });
    expect(decodeEvent(ev('message.updated', { info: { ...info, role: 'system' } }))).toEqual({ kind: 'other' });
  });

  test('only MessageAbortedError is a user stop', () => {
    expect(decodeEvent(ev('session.error', { sessionID: 's', error: { name: 'MessageAbortedError' } }))).toEqual({ kind: 'aborted', sessionId: 's' });
    expect(decodeEvent(ev('session.error', { sessionID: 's', error: { name: 'ProviderAuthError' } }))).toEqual({ kind: 'other' });
  });

  test('permission requests go to the handler raw; anything else is other; nothing throws', () => {
    const e = ev('permission.v2.asked', { id: 'per_1', sessionID: 's' });
    expect(decodeEvent(e)).toEqual({ kind: 'permission', permission: 'v2', event: e });
    expect(permissionKind('permission.asked')).toBe('asked');
    expect(permissionKind('permission.replied')).toBeUndefined();
    expect(decodeEvent(ev('tui.toast.show'))).toEqual({ kind: 'other' });
    expect(decodeEvent({ type: 'session.idle' })).toEqual({ kind: 'other' });
    expect(decodeEvent(null)).toEqual({ kind: 'other' });
  });
});
