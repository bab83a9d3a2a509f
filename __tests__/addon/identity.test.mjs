// Covers: who may hold an alias. threats.md family: Identity — taking over a live peer's
// alias (also by case), reusing the alias of a dead owner, the owner itself re-registering,
// and attach binding identity from the registration, never from an alias argument.
import { describe, expect, test } from 'vitest';
import { addon, Broker, catchErr, deadPid, holderProcess, sid, useBrokerFixtures, waitExit } from '../helpers/broker.mjs';

const fx = useBrokerFixtures();

describe('aliases', () => {
  test('collisions compare case-insensitively and the original case is kept', () => {
    const root = fx.root();
    const a = fx.open({ root, sessionId: sid('a'), alias: 'Alice' });
    for (const alias of ['alice', 'ALICE', 'aLiCe']) {
      const e = catchErr(() => Broker.open({ root, sessionId: sid('x'), alias }));
      expect(e.code, alias).toBe('E_ALIAS_TAKEN');
    }
    expect(addon.listRegistrations(root).map((r) => r.alias)).toEqual(['Alice']);
    const b = fx.open({ root, sessionId: sid('b'), alias: 'bob' });
    const r = b.send('alice', 'case does not matter');
    expect(r.toAlias).toBe('Alice');
    expect(a.peek().map((m) => m.content)).toEqual(['case does not matter']);
  });

  test('the alias of a dead owner can be reused, and mail does not follow the alias', async () => {
    const root = fx.root();
    const a = fx.open({ root, sessionId: sid('a'), alias: 'alice' });
    const holder = fx.track(holderProcess());
    const oldSid = sid('old');
    fx.open({ root, sessionId: oldSid, alias: 'bob', pid: holder.pid });
    a.send('bob', 'for the old bob');
    // while the owner lives, nobody else may take the alias
    expect(catchErr(() => Broker.open({ root, sessionId: sid('n'), alias: 'bob' })).code).toBe('E_ALIAS_TAKEN');
    holder.kill('SIGKILL');
    await waitExit(holder);
    const newBob = fx.open({ root, sessionId: sid('new'), alias: 'BOB' });
    const regs = addon.listRegistrations(root);
    expect(regs.map((r) => r.sessionId).sort()).toEqual([a.sessionId, newBob.sessionId].sort());
    expect(regs.find((r) => r.sessionId === newBob.sessionId).alias).toBe('BOB');
    // the old owner's queued mail is not handed to the new owner of the alias
    expect(newBob.peek()).toEqual([]);
    a.send('bob', 'for the new bob');
    expect(newBob.peek().map((m) => m.content)).toEqual(['for the new bob']);
  });

  test('a session re-registering itself is not locked out by its own earlier registration', () => {
    const root = fx.root();
    const s = sid('a');
    fx.open({ root, sessionId: s, alias: 'alice' });
    const again = fx.open({ root, sessionId: s, alias: 'alice' });
    expect(again.alias).toBe('alice');
    expect(addon.listRegistrations(root).filter((r) => r.sessionId === s)).toHaveLength(1);
  });

  test('attach takes the identity from the registration, not from an alias argument', () => {
    const root = fx.root();
    const a = fx.open({ root, sessionId: sid('a'), alias: 'alice' });
    const b = fx.open({ root, sessionId: sid('b'), alias: 'bob' });
    const attached = fx.open({ root, sessionId: b.sessionId, alias: 'mallory', attach: true });
    expect(attached.alias).toBe('bob');
    attached.send('alice', 'from the attached handle');
    expect(a.peek()[0]).toMatchObject({ fromAlias: 'bob', fromSessionId: b.sessionId });
    // closing an attached handle leaves the registration alone
    attached.close();
    expect(addon.listRegistrations(root).map((r) => r.alias).sort()).toEqual(['alice', 'bob']);
  });

  test('listPeers marks self and liveness', async () => {
    const root = fx.root();
    const a = fx.open({ root, sessionId: sid('a'), alias: 'alice', pluginVersion: '9.9.9', clientType: 'test' });
    fx.open({ root, sessionId: sid('g'), alias: 'ghost', pid: await deadPid() });
    const peers = a.listPeers();
    expect(peers.find((p) => p.alias === 'alice')).toMatchObject({
      isSelf: true, alive: true, pid: process.pid, pluginVersion: '9.9.9', clientType: 'test',
    });
    expect(peers.find((p) => p.alias === 'ghost')).toMatchObject({ isSelf: false, alive: false });
  });
});
