// Covers plugin/src/permissions/{handler,reply}.mts with the real Rust PermissionGate and a
// recording fake client (threats.md "Permission authority": auto-approval never "always",
// never for foreign sessions, never twice; a reply only from the handler).
import { afterAll, describe, expect, test } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { PermissionHandler } from '../../plugin/dist/permissions/handler.mjs';
import { makeReply } from '../../plugin/dist/permissions/reply.mjs';
import { describeModes } from '../../plugin/dist/modes.mjs';
import { makeHistory } from '../../plugin/dist/history.mjs';

const addon = createRequire(import.meta.url)('../../index.js');
const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'c2c-perm-'));
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

let seq = 0;
function newGate(peerPermissions = 'allow') {
  const dir = path.join(tmp, `p${++seq}`);
  fs.mkdirSync(dir, { recursive: true });
  const brokerRoot = path.join(tmp, `b${seq}`);
  return { gate: new addon.PermissionGate({ peerPermissions, directory: dir, brokerRoot, startedAtMs: 0 }), brokerRoot };
}

/** A fake OpenCode client recording every call; `server` holds fetchable messages. */
function fakeClient(server = { messages: [], sessions: {} }) {
  const calls = [];
  const client = {
    session: {
      async message({ path: p }) {
        calls.push(['session.message', p]);
        const m = server.messages.find((x) => x.info.id === p.messageID);
        return m ? { data: m } : { error: { name: 'NotFound' } };
      },
      async get({ path: p }) {
        calls.push(['session.get', p]);
        const s = server.sessions[p.id];
        return s ? { data: s } : { error: { name: 'NotFound' } };
      },
      async messages({ path: p }) {
        calls.push(['session.messages', p]);
        return { data: server.messages.filter((m) => m.info.sessionID === p.id) };
      },
      async promptAsync(o) {
        calls.push(['session.promptAsync', o]);
        return { response: { status: 204 } };
      },
    },
    async postSessionIdPermissionsPermissionId(o) {
      calls.push(['postSessionIdPermissionsPermissionId', o]);
      return {};
    },
    _client: {
      async post(o) {
        calls.push(['_client.post', o]);
        return { data: {} };
      },
    },
    app: { async log() {} },
  };
  return { client, calls };
}

const replies = (calls) => calls.filter((c) => c[0] === 'postSessionIdPermissionsPermissionId' || c[0] === '_client.post');

// Real epoch-ms times (past 2^31: they cross napi as floats).
const T = 1_795_998_702_000;
const ev = (type, properties) => ({ type, properties });
const user = (id, sid, created) => ({ id, sessionID: sid, role: 'user', time: { created } });
const asst = (id, sid, parent, created) => ({ id, sessionID: sid, role: 'assistant', parentID: parent, time: { created } });
const textPart = (mid, sid, peer) => ({
  id: `prt_${mid}`, sessionID: sid, messageID: mid, type: 'text', text: 'x',
  ...(peer ? { synthetic: true, metadata: { peerMessage: { messageId: 'c2c_1', from: 'bob', via: ['ses_b'] } } } : {}),
});
const toolPart = (mid, sid, call, input) => ({
  id: `prt_t${mid}`, sessionID: sid, messageID: mid, type: 'tool', callID: call, tool: 'bash',
  state: { status: 'running', input, time: { start: 1 } },
});

/** The events of a turn in `sid` started by a peer message (or by the user) running `command`. */
function turnEvents(sid, { peer, command = 'touch peer-made.txt' }) {
  return [
    ev('session.created', { info: { id: sid } }),
    ev('message.updated', { info: user('msg_u', sid, T + 1000) }),
    ev('message.part.updated', { part: textPart('msg_u', sid, peer) }),
    ev('session.status', { sessionID: sid, status: { type: 'busy' } }),
    ev('message.updated', { info: asst('msg_a', sid, 'msg_u', T + 1002) }),
    ev('message.part.updated', { part: toolPart('msg_a', sid, 'call_1', { command }) }),
  ];
}

const asked = (id, sid, command = 'touch peer-made.txt') =>
  ev('permission.asked', {
    id, sessionID: sid, permission: 'bash', patterns: [command], metadata: { command }, always: ['touch *'],
    tool: { messageID: 'msg_a', callID: 'call_1' },
  });
const v2Asked = (id, sid, command = 'touch peer-made.txt') =>
  ev('permission.v2.asked', {
    id, sessionID: sid, action: 'bash', resources: [command], metadata: { command },
    source: { type: 'tool', messageID: 'msg_a', callID: 'call_1' },
  });

function setup({ mode = 'allow', ours = ['ses_1'], server } = {}) {
  const { gate, brokerRoot } = newGate(mode);
  const { client, calls } = fakeClient(server);
  const logs = [];
  const handler = new PermissionHandler({
    gate,
    history: makeHistory(client),
    reply: makeReply(client),
    owns: async (sid) => ours.includes(sid),
    log: (level, message) => logs.push([level, message]),
  });
  return { gate, client, calls, handler, logs, brokerRoot };
}

function auditLines(brokerRoot) {
  const f = path.join(brokerRoot, 'broker.log');
  if (!fs.existsSync(f)) return [];
  return fs.readFileSync(f, 'utf8').trim().split('\n').map((l) => JSON.parse(l)).filter((l) => l.event === 'permission_decision');
}

describe('PermissionHandler with the Rust gate', () => {
  test('a peer-triggered bash call is answered "once", exactly once, even when the event repeats', async () => {
    const { gate, calls, handler, brokerRoot } = setup();
    for (const e of turnEvents('ses_1', { peer: true })) gate.observe(e);
    const d = await handler.handle(asked('per_1', 'ses_1'));
    expect(d.action).toBe('once');
    expect(d.from).toBe('bob');
    await handler.handle(asked('per_1', 'ses_1'));
    await Promise.all([handler.handle(asked('per_1', 'ses_1')), handler.handle(asked('per_1', 'ses_1'))]);
    const r = replies(calls);
    expect(r).toHaveLength(1);
    expect(r[0][1]).toEqual({ path: { id: 'ses_1', permissionID: 'per_1' }, body: { response: 'once' } });
    const lines = auditLines(brokerRoot);
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatchObject({ request: 'per_1', provenance: 'peer', mode: 'allow', decision: 'once' });
    expect(lines[0].session).not.toBe('ses_1');
  });

  test('v2 requests are answered at the v2 endpoint through the SDK client', async () => {
    const { gate, calls, handler } = setup();
    for (const e of turnEvents('ses_1', { peer: true })) gate.observe(e);
    const d = await handler.handle(v2Asked('per_v2', 'ses_1'));
    expect(d.action).toBe('once');
    const r = replies(calls);
    expect(r).toHaveLength(1);
    expect(r[0][0]).toBe('_client.post');
    expect(r[0][1]).toMatchObject({
      url: '/api/session/{sessionID}/permission/{requestID}/reply',
      path: { sessionID: 'ses_1', requestID: 'per_v2' },
      body: { reply: 'once' },
    });
  });

  test('the user\'s own turn is never answered, in any mode', async () => {
    for (const mode of ['allow', 'ask', 'deny']) {
      const { gate, calls, handler } = setup({ mode });
      for (const e of turnEvents('ses_1', { peer: false })) gate.observe(e);
      expect((await handler.handle(asked('per_1', 'ses_1'))).action).toBe('leave');
      expect((await handler.handle(v2Asked('per_2', 'ses_1'))).action).toBe('leave');
      expect(replies(calls)).toEqual([]);
    }
  });

  test('deny rejects, ask leaves, a guardrail hit leaves', async () => {
    {
      const { gate, calls, handler } = setup({ mode: 'deny' });
      for (const e of turnEvents('ses_1', { peer: true })) gate.observe(e);
      expect((await handler.handle(asked('per_1', 'ses_1'))).action).toBe('reject');
      expect(replies(calls).map((c) => c[1].body)).toEqual([{ response: 'reject' }]);
    }
    {
      const { gate, calls, handler } = setup({ mode: 'ask' });
      for (const e of turnEvents('ses_1', { peer: true })) gate.observe(e);
      expect((await handler.handle(asked('per_1', 'ses_1'))).action).toBe('leave');
      expect(replies(calls)).toEqual([]);
    }
    {
      const { gate, calls, handler, logs } = setup({ mode: 'allow' });
      const command = 'git config --global core.pager "sh -c x"';
      for (const e of turnEvents('ses_1', { peer: true, command })) gate.observe(e);
      const d = await handler.handle(asked('per_1', 'ses_1', command));
      expect(d).toMatchObject({ action: 'leave', category: 'unproven' });
      expect(replies(calls)).toEqual([]);
      expect(logs.some(([, m]) => m.includes('left to the prompt'))).toBe(true);
    }
  });

  test('requests of sessions that are not ours are ignored: no fetch, no decision, no reply', async () => {
    const { gate, calls, handler, brokerRoot } = setup({ ours: ['ses_1'] });
    for (const e of turnEvents('ses_other', { peer: true })) gate.observe(e);
    expect(await handler.handle(asked('per_x', 'ses_other'))).toBeUndefined();
    expect(await handler.handle(v2Asked('per_y', 'ses_other'))).toBeUndefined();
    expect(calls).toEqual([]);
    expect(auditLines(brokerRoot)).toEqual([]);
  });

  test('missing data is fetched through the client (need-message / need-session), then decided', async () => {
    const sid = 'ses_1';
    const server = {
      messages: [
        { info: user('msg_u', sid, T + 1000), parts: [textPart('msg_u', sid, true)] },
        { info: asst('msg_a', sid, 'msg_u', T + 1002), parts: [toolPart('msg_a', sid, 'call_1', { command: 'touch peer-made.txt' })] },
      ],
      sessions: { [sid]: { id: sid } },
    };
    const { calls, handler } = setup({ server });
    const d = await handler.handle(asked('per_1', sid));
    expect(d.action).toBe('once');
    const fetched = calls.filter((c) => c[0].startsWith('session.')).map((c) => c[0]);
    expect(fetched[0]).toBe('session.message');
    expect(fetched.length).toBeLessThanOrEqual(6);
    expect(replies(calls)).toHaveLength(1);
  });

  test('nothing fetchable: no reply', async () => {
    const { calls, handler } = setup();
    const d = await handler.handle(asked('per_1', 'ses_1'));
    expect(d.action).toBe('leave');
    expect(replies(calls)).toEqual([]);
  });

  test('a failing reply is logged, not thrown, and not retried as another decision', async () => {
    const { gate, client, calls, handler, logs } = setup();
    client.postSessionIdPermissionsPermissionId = async (o) => {
      calls.push(['postSessionIdPermissionsPermissionId', o]);
      return { error: { name: 'NotFound' } };
    };
    for (const e of turnEvents('ses_1', { peer: true })) gate.observe(e);
    expect((await handler.handle(asked('per_1', 'ses_1'))).action).toBe('once');
    expect(logs.some(([l, m]) => l === 'warn' && m.includes('reply once failed'))).toBe(true);
    expect((await handler.handle(asked('per_1', 'ses_1'))).action).toBe('duplicate');
    expect(replies(calls)).toHaveLength(1);
  });
});

describe('the reply capability', () => {
  test('refuses any word but once/reject at run time', async () => {
    const { client, calls } = fakeClient();
    const reply = makeReply(client);
    for (const word of ['always', 'ALWAYS', 'approve-always', '']) {
      await expect(reply('asked', 's', 'p', word)).rejects.toThrow(/refusing/);
      await expect(reply('v2', 's', 'p', word)).rejects.toThrow(/refusing/);
    }
    expect(calls).toEqual([]);
    await reply('asked', 's', 'p', 'reject');
    expect(calls[0][1].body).toEqual({ response: 'reject' });
  });

  test('its source never sends "always"', () => {
    const src = fs.readFileSync(new URL('../../plugin/src/permissions/reply.mts', import.meta.url), 'utf8');
    const code = src.replace(/\/\*[\s\S]*?\*\//g, '').replace(/\/\/.*$/gm, '');
    expect(code).not.toMatch(/always/);
  });

  test('handler and reply import nothing from the delivery path', () => {
    for (const f of ['handler.mts', 'reply.mts']) {
      const src = fs.readFileSync(new URL(`../../plugin/src/permissions/${f}`, import.meta.url), 'utf8');
      // Value imports only: `import type` (the generated napi types, erased at build) carries
      // no code; the compiled module is checked below as well.
      const imports = [...src.matchAll(/^import\s+(?!type\s)[^;]*?from\s+["']([^"']+)["']/gm)].map((m) => m[1]);
      // history.mjs holds read-only fetches (no inject, no delivery)
      for (const i of imports) expect(['../host.mjs', './reply.mjs', '../history.mjs']).toContain(i);
      const built = fs.readFileSync(new URL(`../../plugin/dist/permissions/${f.replace('.mts', '.mjs')}`, import.meta.url), 'utf8');
      for (const [, i] of built.matchAll(/from\s+["']([^"']+)["']/g)) expect(['../host.mjs', './reply.mjs', '../history.mjs']).toContain(i);
    }
    const history = fs.readFileSync(new URL('../../plugin/src/history.mts', import.meta.url), 'utf8');
    // value imports: none (its only import from host.mjs is a type); the compiled module has none
    expect([...history.matchAll(/^import\s+(?!type\s)[^;]*?from\s+["']([^"']+)["']/gm)].map((m) => m[1])).toEqual([]);
    expect([...history.matchAll(/from\s+["']([^"']+)["']/g)].map((m) => m[1]).sort()).toEqual(['./addon.mjs', './host.mjs']);
    const builtHistory = fs.readFileSync(new URL('../../plugin/dist/history.mjs', import.meta.url), 'utf8');
    expect(builtHistory).not.toMatch(/\bimport\b|\brequire\(/);
    expect(history).not.toMatch(/promptAsync|postSessionIdPermissions|\/reply/);
    {
    }
  });
});

describe('modes', () => {
  test('/peers shows peerPermissions and leaves a place for inbound', () => {
    const { gate } = newGate('deny');
    expect(gate.mode).toBe('deny');
    expect(gate.modeSource).toBe('option');
    const text = describeModes({ peerPermissions: gate.mode, peerPermissionsSource: gate.modeSource });
    expect(text).toContain('peerPermissions: deny (option)');
    expect(text).toContain('inbound:');
    expect(describeModes({ permissionsDisabled: 'E_INVALID_OPTION: x' })).toContain('peerPermissions: off');
  });

  test('a misspelt mode fails the gate with E_INVALID_OPTION', () => {
    expect(() => newGate('alow')).toThrow(expect.objectContaining({ code: 'E_INVALID_OPTION' }));
  });
});
