// Covers plugin/src/sessions.mts with the real addon and a fake OpenCode client: root sessions
// register (children act through their root), busy state starts unknown, a deleted session's
// mail is dead-lettered, a lost registration heals, and nothing registers after shutdown.
import { describe, expect, test } from 'vitest';
import fs from 'node:fs';
import { addon, sid, useBrokerFixtures } from '../helpers/broker.mjs';
import { Sessions, STARTING_GRACE_MS } from '../../plugin/dist/sessions.mjs';

const fx = useBrokerFixtures();

/** Sessions over a fresh root; `parents` is what the fake `GET /session/:id` knows. */
function make(parents = {}) {
  const root = fx.root();
  const logs = [];
  const gets = [];
  const registered = [];
  const client = {
    session: {
      async get({ path }) {
        gets.push(path.id);
        await new Promise((r) => setTimeout(r, 5));
        return path.id in parents ? { data: { id: path.id, parentID: parents[path.id] ?? undefined } } : { error: { name: 'NotFound' } };
      },
    },
  };
  const options = { brokerRoot: root, supervisors: [], fallbackIntervalMs: 2000, retryBaseMs: 500 };
  const logger = { log: (level, message) => logs.push([level, message]), ready() {} };
  const sessions = new Sessions(addon, client, '/tmp/project-x', options, logger, '9.9.9', (id) => registered.push(id));
  const aliases = () => addon.listRegistrations(root).map((r) => [r.sessionId, r.alias, r.pluginVersion]);
  return { root, logs, gets, registered, sessions, aliases };
}

describe('Sessions', () => {
  test('a root session registers once (with the plugin version); a child never registers', () => {
    const { sessions, registered, aliases } = make();
    const root = sid('r');
    const b = sessions.observe({ id: root });
    try {
      expect(b.alias).toMatch(/^project-x-[0-9a-f]{4}$/);
      expect(sessions.observe({ id: root })).toBe(b);
      expect(sessions.observe({ id: sid('c'), parentID: root })).toBeUndefined();
      expect(registered).toEqual([root]);
      expect(aliases()).toEqual([[root, b.alias, '9.9.9']]);
      expect(sessions.registered()).toEqual([root]);
    } finally {
      sessions.shutdownAll();
    }
  });

  test('a child acts through its root; an unknown session is looked up once, concurrent asks share it', async () => {
    const root = sid('r');
    const child = sid('c');
    const grandchild = sid('g');
    const { sessions, gets } = make({ [root]: null, [child]: root, [grandchild]: child });
    try {
      const [a, b] = await Promise.all([sessions.brokerFor(grandchild), sessions.brokerFor(grandchild)]);
      expect(a).toBeDefined();
      expect(a).toBe(b);
      expect(a.sessionId).toBe(root);
      expect(gets.filter((g) => g === grandchild)).toHaveLength(1);
      expect(await sessions.rootOf(child)).toBe(root);
      expect(await sessions.rootOf(sid('unknown'))).toBeNull();
      expect(await sessions.brokerFor(sid('unknown'))).toBeUndefined();
    } finally {
      sessions.shutdownAll();
    }
  });

  test('busy is unknown until told, then what it was told; forget clears it', () => {
    const { sessions } = make();
    const id = sid('r');
    sessions.observe({ id });
    try {
      expect(sessions.isBusy(id)).toBeUndefined();
      sessions.setBusy(id, true);
      expect(sessions.isBusy(id)).toBe(true);
      sessions.setBusy(id, false);
      expect(sessions.isBusy(id)).toBe(false);
      sessions.forget(id);
      expect(sessions.isBusy(id)).toBeUndefined();
      expect(sessions.get(id)).toBeUndefined();
    } finally {
      sessions.shutdownAll();
    }
  });

  test('a user message counts the session busy at once; a stale idle is ignored until OpenCode confirms the loop', () => {
    // Issue 16/19: chat.message comes before OpenCode's loop sets busy; an idle event arriving
    // after it belongs to the previous turn.
    const { sessions } = make();
    const id = sid('r');
    sessions.setBusy(id, false);
    expect(sessions.turnStarting(id, 'msg_1')).toBe(true);
    expect(sessions.isBusy(id)).toBe(true);
    expect(typeof sessions.startingFor(id)).toBe('number');
    // The same message again (its message.updated, its summary update): nothing new.
    expect(sessions.turnStarting(id, 'msg_1')).toBe(false);
    // A stale idle event: ignored. The server's idle inside the grace: ignored too.
    expect(sessions.status(id, false)).toBe(false);
    expect(sessions.status(id, false, true)).toBe(false);
    expect(sessions.isBusy(id)).toBe(true);
    // OpenCode's busy confirms the loop; its idle then ends the turn.
    expect(sessions.status(id, true)).toBe(false);
    expect(sessions.startingFor(id)).toBeUndefined();
    expect(sessions.status(id, false)).toBe(true);
    expect(sessions.isBusy(id)).toBe(false);
    // Our own injection: the delivery counts it busy outright; its chat.message then marks the
    // turn starting too (a stale idle is ignored until OpenCode confirms its loop).
    sessions.setBusy(id, true);
    expect(sessions.startingFor(id)).toBeUndefined();
    expect(sessions.turnStarting(id, 'msg_2')).toBe(true);
    expect(sessions.status(id, false)).toBe(false);
    expect(sessions.isBusy(id)).toBe(true);
  });

  test('a user message that starts no loop (noReply) is settled by the server after the grace', async () => {
    const { sessions } = make();
    const id = sid('r');
    sessions.turnStarting(id, 'msg_1');
    // OpenCode stores it (message.updated) and starts no loop.
    expect(sessions.turnStarting(id, 'msg_1', true)).toBe(false);
    expect(sessions.status(id, false, true)).toBe(false);
    await new Promise((r) => setTimeout(r, STARTING_GRACE_MS + 20));
    // An event's idle still counts as stale; the server's is believed now.
    expect(sessions.status(id, false)).toBe(false);
    expect(sessions.status(id, false, true)).toBe(true);
    expect(sessions.isBusy(id)).toBe(false);
    expect(sessions.startingFor(id)).toBeUndefined();
  });

  test('red team 3: a user message not stored yet (a slow chat.message hook) keeps the session busy past the grace', async () => {
    const { sessions } = make();
    const id = sid('s');
    sessions.turnStarting(id, 'msg_1');
    await new Promise((r) => setTimeout(r, STARTING_GRACE_MS + 20));
    // Created, not stored: OpenCode has not started its loop, whatever the server says.
    expect(sessions.status(id, false, true)).toBe(false);
    expect(sessions.isBusy(id)).toBe(true);
    // Stored now: the grace starts again from here.
    expect(sessions.turnStarting(id, 'msg_1', true)).toBe(false);
    expect(sessions.status(id, false, true)).toBe(false);
    await new Promise((r) => setTimeout(r, STARTING_GRACE_MS + 20));
    expect(sessions.status(id, false, true)).toBe(true);
    expect(sessions.isBusy(id)).toBe(false);
  });

  test("a deleted session (ended) leaves the registry and its undelivered mail goes to dead-letter", () => {
    const { root, sessions, aliases, logs } = make();
    const id = sid('r');
    const b = sessions.observe({ id });
    const peer = fx.open({ root, sessionId: sid('p'), alias: 'peer' });
    peer.send(b.alias, 'are you there?');
    sessions.forget(id, true);
    expect(aliases().map((r) => r[0])).toEqual([peer.sessionId]);
    expect(fs.readFileSync(`${root}/dead-letter.jsonl`, 'utf8').trim().split('\n')).toHaveLength(1);
    expect(logs.some(([, m]) => m.includes('1 undelivered message(s) dead-lettered'))).toBe(true);
  });

  test('a registration lost with its root heals: the session registers again, logged once', () => {
    const { root, sessions, aliases, logs } = make();
    const id = sid('r');
    const first = sessions.observe({ id });
    try {
      sessions.heal(id); // healthy: nothing happens
      expect(sessions.get(id)).toBe(first);
      fs.rmSync(root, { recursive: true, force: true });
      fs.mkdirSync(root, { mode: 0o700 });
      expect(first.isHealthy()).toBe(false);
      sessions.heal(id);
      const again = sessions.get(id);
      expect(again).toBeDefined();
      expect(again).not.toBe(first);
      expect(aliases().map((r) => r[0])).toEqual([id]);
      expect(logs.filter(([l, m]) => l === 'warn' && m.includes('registering it again'))).toHaveLength(1);
    } finally {
      sessions.shutdownAll();
    }
  });

  test('after shutdownAll nothing registers and the registry is empty', () => {
    const { sessions, aliases } = make();
    sessions.observe({ id: sid('r') });
    sessions.shutdownAll();
    expect(aliases()).toEqual([]);
    expect(sessions.observe({ id: sid('s') })).toBeUndefined();
    expect(sessions.registered()).toEqual([]);
    sessions.shutdownAll(); // idempotent
  });

  test('a registration that fails is logged with its code, not thrown', () => {
    const { root, sessions, logs } = make();
    fs.chmodSync(root, 0o777);
    try {
      expect(sessions.observe({ id: sid('r') })).toBeUndefined();
      expect(logs.some(([l, m]) => l === 'error' && m.includes('E_ROOT_INSECURE'))).toBe(true);
    } finally {
      fs.chmodSync(root, 0o700);
      sessions.shutdownAll();
    }
  });
});
