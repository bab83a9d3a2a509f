// Covers: direct messages between two handles in one process (send → peek → ack, drain, the
// archive), broadcast, and rooms. threats.md families: Delivery (a message is archived only
// when acknowledged, exactly the acked ones; nothing lost or duplicated), Identity (the
// sender label comes from the handle, never from an argument).
import { describe, expect, test } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { deadPid, sid, useBrokerFixtures } from '../helpers/broker.mjs';

const fx = useBrokerFixtures();

function readJsonl(file) {
  return fs.readFileSync(file, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l));
}

describe('direct messages in one process', () => {
  test('send → peek → ack moves exactly the acked message to the archive', () => {
    const root = fx.root();
    const a = fx.open({ root, sessionId: sid('a'), alias: 'alice' });
    const b = fx.open({ root, sessionId: sid('b'), alias: 'bob' });

    const r1 = a.send('bob', 'first');
    const r2 = a.send('BOB', 'second'); // recipient alias is case-insensitive
    expect(r1.status).toBe('queued');
    expect(r1.toSessionId).toBe(b.sessionId);
    expect(r1.toAlias).toBe('bob');
    expect(r1.messageId).toMatch(/^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/);
    expect(r2.messageId).not.toBe(r1.messageId);

    const seen = b.peek();
    expect(seen.map((m) => m.content)).toEqual(['first', 'second']);
    expect(seen[0]).toMatchObject({
      messageId: r1.messageId,
      fromAlias: 'alice',
      toAlias: 'bob',
      fromSessionId: a.sessionId,
      via: [a.sessionId],
    });
    expect(seen[0].ts).toBeCloseTo(r1.ts, 3);
    // peek does not consume
    expect(b.peek().length).toBe(2);
    // a's own inbox is untouched
    expect(a.peek()).toEqual([]);

    const rep = b.ack([r1.messageId, 'not-a-real-id']);
    expect(rep.acked).toEqual([r1.messageId]);
    expect(rep.missing).toEqual(['not-a-real-id']);
    expect(b.peek().map((m) => m.messageId)).toEqual([r2.messageId]);

    const archive = path.join(b.root, 'archive', `${b.sessionId}.jsonl`);
    const lines = readJsonl(archive);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({
      message_id: r1.messageId,
      content: 'first',
      from_alias: 'alice',
      to_alias: 'bob',
      session_id: b.sessionId,
    });
    expect(typeof lines[0].drained_at).toBe('number');
    expect(lines[0].drained_at).toBeGreaterThanOrEqual(r1.ts);
    expect(typeof lines[0].drained_by).toBe('string');
    expect(lines[0].drained_by.length).toBeGreaterThan(0);
    expect(fs.statSync(archive).mode & 0o777).toBe(0o600);

    // acking again reports it missing and archives nothing twice
    const again = b.ack([r1.messageId]);
    expect(again).toEqual({ acked: [], missing: [r1.messageId] });
    expect(readJsonl(archive)).toHaveLength(1);
  });

  test('drain takes every message once and archives them', () => {
    const root = fx.root();
    const a = fx.open({ root, sessionId: sid('a'), alias: 'alice' });
    const b = fx.open({ root, sessionId: sid('b'), alias: 'bob' });
    const ids = ['x', 'y', 'z'].map((c) => a.send('bob', c).messageId);
    const drained = b.drain();
    expect(drained.map((m) => m.messageId)).toEqual(ids);
    expect(b.drain()).toEqual([]);
    expect(JSON.parse(fs.readFileSync(path.join(b.root, `${b.sessionId}.inbox.json`), 'utf8'))).toEqual([]);
    const archived = readJsonl(path.join(b.root, 'archive', `${b.sessionId}.jsonl`));
    expect(archived.map((l) => l.message_id)).toEqual(ids);
  });

  test('the sender label comes from the handle, and via gets the sender appended', () => {
    const root = fx.root();
    const a = fx.open({ root, sessionId: sid('a'), alias: 'alice' });
    const b = fx.open({ root, sessionId: sid('b'), alias: 'bob' });
    a.send('bob', 'relayed', { via: ['ses_origin'] });
    const [m] = b.peek();
    expect(m.fromAlias).toBe(a.alias);
    expect(m.via).toEqual(['ses_origin', a.sessionId]);
  });

  test('inbox and registry files are private (0600) in a 0700 root', () => {
    const root = fx.root();
    const a = fx.open({ root, sessionId: sid('a'), alias: 'alice' });
    fx.open({ root, sessionId: sid('b'), alias: 'bob' });
    a.send('bob', 'hi');
    for (const f of fs.readdirSync(root)) {
      const st = fs.lstatSync(path.join(root, f));
      if (st.isFile() && /\.json$|\.jsonl$|\.log$/.test(f)) {
        expect(st.mode & 0o077, f).toBe(0);
      }
    }
  });
});

describe('broadcast', () => {
  test('sendAll reaches every other live session and lists dead ones as skipped', async () => {
    const root = fx.root();
    const a = fx.open({ root, sessionId: sid('a'), alias: 'alice' });
    const b = fx.open({ root, sessionId: sid('b'), alias: 'bob' });
    const c = fx.open({ root, sessionId: sid('c'), alias: 'carol' });
    fx.open({ root, sessionId: sid('d'), alias: 'ghost', pid: await deadPid() });
    const rep = a.sendAll('hello all');
    expect(rep.sent.map((r) => r.toAlias).sort()).toEqual(['bob', 'carol']);
    expect(rep.skipped).toEqual([{ alias: 'ghost', reason: 'not alive' }]);
    expect(b.peek().map((m) => m.content)).toEqual(['hello all']);
    expect(c.peek().map((m) => m.content)).toEqual(['hello all']);
    expect(a.peek()).toEqual([]);
  });
});

describe('rooms', () => {
  test('join, sendRoom reaches other members as alias#room, history, list, leave', async () => {
    const root = fx.root();
    const a = fx.open({ root, sessionId: sid('a'), alias: 'alice' });
    const b = fx.open({ root, sessionId: sid('b'), alias: 'bob' });
    const c = fx.open({ root, sessionId: sid('c'), alias: 'carol' });
    const outsider = fx.open({ root, sessionId: sid('o'), alias: 'olga' });
    for (const h of [a, b, c]) h.joinRoom('dev-room');
    a.joinRoom('dev-room'); // joining twice is a no-op

    const rooms = a.listRooms();
    expect(rooms).toHaveLength(1);
    expect(rooms[0].roomId).toBe('dev-room');
    expect(rooms[0].members.sort()).toEqual(['alice', 'bob', 'carol']);
    expect(rooms[0].joined).toBe(true);
    expect(outsider.listRooms()[0].joined).toBe(false);

    const rep = a.sendRoom('dev-room', 'standup in 5');
    expect(rep.sent.map((r) => r.toAlias).sort()).toEqual(['bob#dev-room', 'carol#dev-room']);
    expect(rep.skipped).toEqual([]);
    for (const [h, alias] of [[b, 'bob'], [c, 'carol']]) {
      const msgs = h.peek();
      expect(msgs).toHaveLength(1);
      expect(msgs[0]).toMatchObject({
        fromAlias: 'alice', toAlias: `${alias}#dev-room`, content: 'standup in 5', roomId: 'dev-room',
      });
    }
    expect(a.peek()).toEqual([]);
    expect(outsider.peek()).toEqual([]);

    b.sendRoom('dev-room', 'ack');
    const hist = c.roomHistory('dev-room');
    expect(hist.map((h) => [h.fromAlias, h.content])).toEqual([['alice', 'standup in 5'], ['bob', 'ack']]);
    expect(c.roomHistory('dev-room', 1).map((h) => h.content)).toEqual(['ack']);
    expect(hist[0].messageId).toMatch(/[0-9a-f-]{36}/);
    const histFile = path.join(root, 'rooms', 'dev-room', 'history.jsonl');
    expect(readJsonl(histFile)).toHaveLength(2);

    expect(c.leaveRoom('dev-room')).toBe(true);
    expect(c.leaveRoom('dev-room')).toBe(false);
    c.drain();
    const rep2 = a.sendRoom('dev-room', 'after carol left');
    expect(rep2.sent.map((r) => r.toAlias)).toEqual(['bob#dev-room']);
    expect(c.peek()).toEqual([]);
    expect(a.listRooms()[0].members.sort()).toEqual(['alice', 'bob']);
  });

  test('a dead member is skipped, not an error', async () => {
    const root = fx.root();
    const a = fx.open({ root, sessionId: sid('a'), alias: 'alice' });
    const g = fx.open({ root, sessionId: sid('g'), alias: 'ghost', pid: await deadPid() });
    a.joinRoom('r1');
    g.joinRoom('r1');
    const rep = a.sendRoom('r1', 'anyone?');
    expect(rep.sent).toEqual([]);
    expect(rep.skipped).toEqual([{ alias: 'ghost', reason: 'not alive' }]);
  });
});

describe('acknowledgeAsync (the acknowledgement on the libuv pool)', () => {
  test('archives exactly the acked message, sends one delivered receipt, and a second ack moves nothing', async () => {
    const root = fx.root();
    const a = fx.open({ root, sessionId: sid('a'), alias: 'alice' });
    const b = fx.open({ root, sessionId: sid('b'), alias: 'bob' });
    const m1 = a.send('bob', 'first').messageId;
    const m2 = a.send('bob', 'second').messageId;
    const pending = b.acknowledgeAsync([m1], 'delivered');
    expect(pending).toBeInstanceOf(Promise);
    // Two acknowledgements of one message at once: the inbox lock serialises them.
    const [first, second] = await Promise.all([pending, b.acknowledgeAsync([m1], 'delivered')]);
    expect([...first, ...second]).toEqual([m1]);
    expect(b.peek().map((m) => m.messageId)).toEqual([m2]);
    expect(a.receipts().filter((r) => r.messageId === m1).map((r) => r.status)).toEqual(['delivered']);
    expect(await b.acknowledgeAsync([m1], 'delivered')).toEqual([]);
  });

  test('a bad status throws at once; a closed handle rejects with E_CLOSED', async () => {
    const root = fx.root();
    const b = fx.open({ root, sessionId: sid('b'), alias: 'bob' });
    expect(() => b.acknowledgeAsync(['x'], 'seen')).toThrow(expect.objectContaining({ code: 'E_INVALID_ARG' }));
    b.close();
    await expect(b.acknowledgeAsync(['x'], 'delivered')).rejects.toMatchObject({ code: 'E_CLOSED' });
  });
});
