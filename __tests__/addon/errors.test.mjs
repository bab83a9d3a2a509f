// Covers: every error code reachable from JS, one test each, asserting the stable `err.code`
// and the state left behind. threats.md families: Delivery (no success reported for a
// recipient that does not exist or is dead; an oversized body is refused, never truncated),
// Identity (attaching to a session that is not registered), Storage (ids as path components).
import { describe, expect, test } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { addon, Broker, catchErr, deadPid, sid, useBrokerFixtures } from '../helpers/broker.mjs';

const fx = useBrokerFixtures();

function pair(root) {
  const a = fx.open({ root, sessionId: sid('a'), alias: 'alice' });
  const b = fx.open({ root, sessionId: sid('b'), alias: 'bob' });
  return { a, b };
}

const inboxBytes = (b) => fs.readFileSync(path.join(b.root, `${b.sessionId}.inbox.json`), 'utf8');

describe('error codes', () => {
  test('E_ALIAS_TAKEN names a free alternative that can be used', () => {
    const root = fx.root();
    fx.open({ root, sessionId: sid('a'), alias: 'bob' });
    const e = catchErr(() => Broker.open({ root, sessionId: sid('b'), alias: 'bob' }));
    expect(e).toBeInstanceOf(Error);
    expect(e.code).toBe('E_ALIAS_TAKEN');
    const suggestion = /try "([^"]+)"/.exec(e.message)?.[1];
    expect(suggestion).toBeTruthy();
    expect(suggestion.toLowerCase()).not.toBe('bob');
    expect(suggestion.startsWith('bob')).toBe(true);
    const b2 = fx.open({ root, sessionId: sid('b'), alias: suggestion });
    expect(b2.alias).toBe(suggestion);
  });

  test('E_UNKNOWN_RECIPIENT for an alias nobody registered; nothing written', () => {
    const root = fx.root();
    const { a, b } = pair(root);
    const inboxes = () => fs.readdirSync(root).filter((f) => f.endsWith('.inbox.json')).sort();
    const before = inboxes();
    const e = catchErr(() => a.send('nobody', 'hello?'));
    expect(e.code).toBe('E_UNKNOWN_RECIPIENT');
    expect(e.message).toContain('nobody');
    expect(inboxes()).toEqual(before);
    expect(b.peek()).toEqual([]);
  });

  test('E_RECIPIENT_DEAD for a peer registered with the pid of an exited process', async () => {
    const root = fx.root();
    const a = fx.open({ root, sessionId: sid('a'), alias: 'alice' });
    const ghost = fx.open({ root, sessionId: sid('g'), alias: 'ghost', pid: await deadPid() });
    expect(a.listPeers().find((p) => p.alias === 'ghost').alive).toBe(false);
    const e = catchErr(() => a.send('ghost', 'are you there'));
    expect(e.code).toBe('E_RECIPIENT_DEAD');
    expect(e.message).toMatch(/not alive/);
    expect(ghost.peek()).toEqual([]);
  });

  test('E_SEND_TO_SELF, also with a differently-cased own alias', () => {
    const root = fx.root();
    const { a } = pair(root);
    for (const to of ['alice', 'ALICE']) {
      expect(catchErr(() => a.send(to, 'me')).code).toBe('E_SEND_TO_SELF');
    }
    expect(a.peek()).toEqual([]);
  });

  test('E_EMPTY for empty and whitespace-only content (send, sendAll, sendRoom)', () => {
    const root = fx.root();
    const { a, b } = pair(root);
    a.joinRoom('r');
    for (const content of ['', '   ', '\n\t ']) {
      expect(catchErr(() => a.send('bob', content)).code).toBe('E_EMPTY');
      expect(catchErr(() => a.sendAll(content)).code).toBe('E_EMPTY');
      expect(catchErr(() => a.sendRoom('r', content)).code).toBe('E_EMPTY');
    }
    expect(b.peek()).toEqual([]);
  });

  test('E_TOO_LARGE refuses, never truncates, and enqueues nothing', () => {
    const root = fx.root();
    const a = fx.open({ root, sessionId: sid('a'), alias: 'alice', maxMessageBytes: 100 });
    const b = fx.open({ root, sessionId: sid('b'), alias: 'bob' });
    expect(a.maxMessageBytes).toBe(100);
    const before = inboxBytes(b);
    const e = catchErr(() => a.send('bob', 'x'.repeat(101)));
    expect(e.code).toBe('E_TOO_LARGE');
    expect(e.message).toMatch(/101/);
    // the limit is in bytes of UTF-8: 51 two-byte characters are 102 bytes
    expect(catchErr(() => a.send('bob', 'é'.repeat(51))).code).toBe('E_TOO_LARGE');
    expect(catchErr(() => a.sendAll('y'.repeat(500))).code).toBe('E_TOO_LARGE');
    expect(inboxBytes(b)).toBe(before);
    expect(b.peek()).toEqual([]);
    // exactly at the limit goes through whole
    const exact = 'z'.repeat(100);
    a.send('bob', exact);
    expect(b.peek().map((m) => m.content)).toEqual([exact]);
    // the default limit applies too
    const big = fx.open({ root, sessionId: sid('c'), alias: 'carol' });
    const over = 'q'.repeat(big.maxMessageBytes + 1);
    expect(catchErr(() => big.send('bob', over)).code).toBe('E_TOO_LARGE');
    expect(b.peek()).toHaveLength(1);
  });

  test('E_INVALID_ID for bad aliases, session ids and room ids; nothing created outside the root', () => {
    const root = fx.root();
    for (const alias of ['bad alias', '../x', '.hidden', 'c2c', 'C2C-System', '', 'x'.repeat(65), 'é', 'a\u001b[31m']) {
      const e = catchErr(() => Broker.open({ root, sessionId: sid('s'), alias }));
      expect(e.code, JSON.stringify(alias)).toBe('E_INVALID_ID');
    }
    for (const sessionId of ['../x', '..', 'a/b', '.x', 'a..b', '', 's'.repeat(129)]) {
      const e = catchErr(() => Broker.open({ root, sessionId, alias: 'fine' }));
      expect(e.code, JSON.stringify(sessionId)).toBe('E_INVALID_ID');
    }
    expect(fs.existsSync(path.join(path.dirname(root), 'x.inbox.json'))).toBe(false);
    expect(fs.existsSync(path.join(root, 'registry.json'))
      ? JSON.parse(fs.readFileSync(path.join(root, 'registry.json'), 'utf8'))
      : []).toEqual([]);
    const a = fx.open({ root, sessionId: sid('a'), alias: 'alice' });
    for (const room of ['a.b', '../x', 'a/b', '', 'r'.repeat(65)]) {
      expect(catchErr(() => a.joinRoom(room)).code, JSON.stringify(room)).toBe('E_INVALID_ID');
      expect(catchErr(() => a.sendRoom(room, 'hi')).code).toBe('E_INVALID_ID');
    }
    expect(fs.existsSync(path.join(root, 'x'))).toBe(false);
  });

  test('E_CLOSED after close(); close is idempotent and unregisters', () => {
    const root = fx.root();
    const { a, b } = pair(root);
    b.close();
    b.close();
    for (const call of [() => b.send('alice', 'x'), () => b.peek(), () => b.drain(), () => b.ack([]),
      () => b.listPeers(), () => b.sweep(), () => b.joinRoom('r'), () => b.listRooms(), () => b.watch(() => {})]) {
      expect(catchErr(call).code).toBe('E_CLOSED');
    }
    expect(addon.listRegistrations(root).map((r) => r.alias)).toEqual(['alice']);
    // with its registration gone, bob is an unknown recipient
    expect(catchErr(() => a.send('bob', 'x')).code).toBe('E_UNKNOWN_RECIPIENT');
  });

  test('E_NOT_MEMBER when posting to a room one has not joined', () => {
    const root = fx.root();
    const { a, b } = pair(root);
    a.joinRoom('private');
    const e = catchErr(() => b.sendRoom('private', 'let me in'));
    expect(e.code).toBe('E_NOT_MEMBER');
    expect(a.peek()).toEqual([]);
    expect(b.roomHistory('private')).toEqual([]);
  });

  test('E_NOT_INVITED, E_ROOM_EXISTS and E_ROOM_DELETE_REFUSED follow c2c\'s room rules', () => {
    const root = fx.root();
    const { a, b } = pair(root);
    a.createRoom('secret', { visibility: 'invite_only', invite: ['carol'] });
    const meta = JSON.parse(fs.readFileSync(path.join(root, 'rooms', 'secret', 'meta.json'), 'utf8'));
    expect(meta).toMatchObject({ visibility: 'invite_only', invited_members: ['carol'], created_by: 'alice' });
    const members = () => fs.readFileSync(path.join(root, 'rooms', 'secret', 'members.json'), 'utf8');
    const before = members();
    expect(catchErr(() => b.joinRoom('secret')).code).toBe('E_NOT_INVITED');
    expect(members()).toBe(before);
    expect(catchErr(() => b.roomHistory('secret')).code).toBe('E_NOT_MEMBER');
    expect(b.listRooms()).toEqual([]);
    expect(catchErr(() => b.createRoom('secret')).code).toBe('E_ROOM_EXISTS');
    expect(catchErr(() => a.createRoom('other', { visibility: 'private' })).code).toBe('E_INVALID_OPTION');
    a.inviteToRoom('secret', 'bob');
    b.joinRoom('secret');
    expect(a.listRooms().map((r) => [r.roomId, r.visibility, r.members.sort()])).toEqual([
      ['secret', 'invite_only', ['alice', 'bob']],
    ]);
    b.leaveRoom('secret');
    a.leaveRoom('secret');
    expect(catchErr(() => b.deleteRoom('secret', true)).code).toBe('E_ROOM_DELETE_REFUSED');
    a.deleteRoom('secret');
    expect(fs.existsSync(path.join(root, 'rooms', 'secret'))).toBe(false);
  });

  test('E_UNKNOWN_ROOM for sendRoom, leaveRoom and roomHistory of a missing room', () => {
    const root = fx.root();
    const { a } = pair(root);
    expect(catchErr(() => a.sendRoom('nope', 'hi')).code).toBe('E_UNKNOWN_ROOM');
    expect(catchErr(() => a.leaveRoom('nope')).code).toBe('E_UNKNOWN_ROOM');
    expect(catchErr(() => a.roomHistory('nope')).code).toBe('E_UNKNOWN_ROOM');
    expect(fs.existsSync(path.join(root, 'rooms', 'nope'))).toBe(false);
  });

  test('E_NOT_REGISTERED when attaching to an unknown session, and after being swept', async () => {
    const root = fx.root();
    const a = fx.open({ root, sessionId: sid('a'), alias: 'alice' });
    const e = catchErr(() => Broker.open({ root, sessionId: sid('unknown'), attach: true }));
    expect(e.code).toBe('E_NOT_REGISTERED');
    // a handle whose registration was swept away can no longer send
    const g = fx.open({ root, sessionId: sid('g'), alias: 'ghost', pid: await deadPid() });
    a.sweep();
    expect(catchErr(() => g.send('alice', 'still here?')).code).toBe('E_NOT_REGISTERED');
    expect(a.peek()).toEqual([]);
  });

  test('E_INVALID_OPTION for a missing alias and a zero size limit', () => {
    const root = fx.root();
    expect(catchErr(() => Broker.open({ root, sessionId: sid('a') })).code).toBe('E_INVALID_OPTION');
    expect(catchErr(() => Broker.open({ root, sessionId: sid('a'), alias: 'a', maxMessageBytes: 0 })).code)
      .toBe('E_INVALID_OPTION');
  });

  test('E_INVALID_ARG for a probeLock file name that leaves the root', () => {
    const root = fx.root();
    for (const f of ['../registry.json', '.hidden', 'a/b']) {
      expect(catchErr(() => addon.probeLock(root, f)).code).toBe('E_INVALID_ARG');
    }
  });

  test('E_ALIAS_PENDING: an alias whose live previous owner has open pending slots', () => {
    const root = fx.root();
    const ownerSid = sid('owner');
    const owner = fx.open({ root, sessionId: ownerSid, alias: 'bob' });
    const now = Date.now() / 1000;
    fs.writeFileSync(path.join(root, 'pending_permissions.json'), JSON.stringify([{
      perm_id: 'per_1', kind: 'permission', requester_session_id: ownerSid, requester_alias: 'bob',
      supervisors: ['sup'], created_at: now, expires_at: now + 600, fallthrough_fired_at: [],
      resolved_at: null, verdict: null,
    }]), { mode: 0o600 });
    // the owner moves to another alias but stays alive with a slot open under "bob"
    const moved = fx.open({ root, sessionId: ownerSid, alias: 'bob-renamed' });
    expect(addon.listRegistrations(root).map((r) => r.alias)).toEqual(['bob-renamed']);
    const e = catchErr(() => Broker.open({ root, sessionId: sid('new'), alias: 'BOB' }));
    expect(e.code).toBe('E_ALIAS_PENDING');
    expect(addon.listRegistrations(root).map((r) => r.alias)).toEqual(['bob-renamed']);
    void owner; void moved;
  });
});
