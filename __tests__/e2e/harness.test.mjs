// Proves the e2e harness against the real OpenCode 1.18.33 binary: a throwaway plugin tool runs
// in a scripted turn, a synthetic part keeps its metadata, and a bash permission round trip works.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { client, waitFor } from './harness/client.mjs';
import { startMockModel } from './harness/mock-model.mjs';
import { startOpencode } from './harness/opencode.mjs';

/** Write a one-tool plugin into a fresh folder with no package.json (that would redirect loading). */
function writeEchoPlugin() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'oc-e2e-plugin-'));
  const file = path.join(dir, 'echo-plugin.mjs');
  fs.writeFileSync(
    file,
    `export default {
  id: 'e2e-echo',
  server: async (input) => ({
    tool: {
      echo_tool: {
        description: 'Echo the given text back',
        args: { text: { type: 'string', description: 'text to echo' } },
        async execute(args, ctx) {
          return 'ECHO:' + args.text + ' from ' + ctx.sessionID;
        },
      },
    },
  }),
};
`,
  );
  return { dir, file };
}

/** @param {any[]} msgs */
const assistantText = (msgs) =>
  msgs
    .filter((m) => m.info.role === 'assistant')
    .flatMap((m) => m.parts)
    .filter((p) => p.type === 'text')
    .map((p) => p.text)
    .join('\n');

describe('harness: plugin tool turn', () => {
  /** @type {Awaited<ReturnType<typeof startMockModel>>} */ let mock;
  /** @type {Awaited<ReturnType<typeof startOpencode>>} */ let oc;
  /** @type {ReturnType<typeof client>} */ let c;
  let plugin;

  beforeAll(async () => {
    plugin = writeEchoPlugin();
    mock = await startMockModel({
      script: (r) => {
        if (r.lastIsToolResult) return { text: `final answer: ${r.toolResults.map((t) => t.content).join(' | ')}` };
        if (r.lastUserText.includes('echo')) return { toolCalls: [{ name: 'echo_tool', arguments: { text: 'hello' } }] };
        return { text: `plain reply to: ${r.lastUserText}` };
      },
    });
    oc = await startOpencode({ modelBaseURL: mock.baseURL('echo'), plugins: [plugin.file] });
    c = client(oc);
    console.info(`[timing] opencode listening ${oc.timings.listenMs} ms, instance ready ${oc.timings.readyMs} ms`);
  });

  afterAll(async () => {
    await oc?.stop();
    await mock?.stop();
    if (plugin) fs.rmSync(plugin.dir, { recursive: true, force: true });
  });

  test('the model calls the plugin tool, then answers', async () => {
    const session = await c.createSession({});
    expect(session.id).toMatch(/^ses_/);
    const ev = await c.events();
    const t0 = Date.now();
    await c.promptAsync(session.id, 'please echo hello');
    await ev.waitFor((e) => e.type === 'session.idle' && e.properties.sessionID === session.id, { timeoutMs: 60_000 });
    console.info(`[timing] first turn (tool + answer) ${Date.now() - t0} ms`);
    await ev.close();

    const msgs = await c.messages(session.id);
    const toolParts = msgs.flatMap((m) => m.parts).filter((p) => p.type === 'tool' && p.tool === 'echo_tool');
    expect(toolParts).toHaveLength(1);
    expect(toolParts[0].state.status).toBe('completed');
    expect(toolParts[0].state.input).toEqual({ text: 'hello' });
    expect(toolParts[0].state.output).toBe(`ECHO:hello from ${session.id}`);
    expect(assistantText(msgs)).toContain(`final answer: ECHO:hello from ${session.id}`);

    // Every step of the loop points at the user message that started it.
    const user = msgs.find((m) => m.info.role === 'user');
    const assistants = msgs.filter((m) => m.info.role === 'assistant');
    expect(assistants.map((m) => m.info.finish)).toEqual(['tool-calls', 'stop']);
    for (const a of assistants) expect(a.info.parentID).toBe(user.info.id);

    // The mock saw the tool offered, then the tool result; the title call was answered apart.
    const turns = mock.turnRequests().filter((r) => r.instance === 'echo');
    expect(turns[0].toolNames).toContain('echo_tool');
    expect(turns[1].lastIsToolResult).toBe(true);
    expect(mock.requests.some((r) => r.isTitle)).toBe(true);
    await waitFor(async () => (await c.getSession(session.id)).title === 'Test session', { timeoutMs: 10_000 });
  });

  test('a synthetic text part keeps its metadata in messages and events', async () => {
    const session = await c.createSession({});
    const ev = await c.events();
    const peerMessage = { from: 'alice', messageId: 'm-1', via: ['alice'] };
    const t0 = Date.now();
    await c.promptAsync(session.id, [{ type: 'text', text: 'hi from a peer', synthetic: true, metadata: { peerMessage } }]);
    await ev.waitFor((e) => e.type === 'session.idle' && e.properties.sessionID === session.id, { timeoutMs: 60_000 });
    console.info(`[timing] later turn (text only) ${Date.now() - t0} ms`);
    await ev.close();

    const msgs = await c.messages(session.id);
    const userPart = msgs[0].parts[0];
    expect(msgs[0].info.role).toBe('user');
    expect(userPart).toMatchObject({ type: 'text', text: 'hi from a peer', synthetic: true, metadata: { peerMessage } });
    expect(assistantText(msgs)).toBe('plain reply to: hi from a peer');

    const partEvent = ev.list.find(
      (e) => e.type === 'message.part.updated' && e.properties.part.messageID === msgs[0].info.id,
    );
    expect(partEvent?.properties.part.metadata).toEqual({ peerMessage });
    // The model only sees the text.
    const last = mock.turnRequests().at(-1);
    expect(JSON.stringify(last.messages)).not.toContain('alice');
  });
});

describe('harness: bash permission round trip', () => {
  /** @type {Awaited<ReturnType<typeof startMockModel>>} */ let mock;
  /** @type {Awaited<ReturnType<typeof startOpencode>>} */ let oc;
  /** @type {ReturnType<typeof client>} */ let c;

  beforeAll(async () => {
    mock = await startMockModel({
      script: (r) =>
        r.lastIsToolResult
          ? { text: 'created x' }
          : { toolCalls: [{ name: 'bash', arguments: { command: 'touch x', description: 'Create file x' } }] },
    });
    oc = await startOpencode({ modelBaseURL: mock.baseURL('perm'), permission: { bash: 'ask' } });
    c = client(oc);
    console.info(`[timing] opencode listening ${oc.timings.listenMs} ms, instance ready ${oc.timings.readyMs} ms`);
  });

  afterAll(async () => {
    await oc?.stop();
    await mock?.stop();
  });

  test('permission.asked is raised, GET /permission lists it, "once" lets bash run', async () => {
    const session = await c.createSession({});
    const ev = await c.events();
    const t0 = Date.now();
    await c.promptAsync(session.id, 'create the file x');

    const asked = await ev.waitFor((e) => e.type === 'permission.asked', { timeoutMs: 60_000 });
    const tAsked = Date.now() - t0;
    expect(asked.properties).toMatchObject({
      sessionID: session.id,
      permission: 'bash',
      patterns: ['touch x'],
      metadata: { command: 'touch x' },
      tool: { callID: expect.any(String), messageID: expect.stringMatching(/^msg/) },
    });
    const pending = await c.permissions();
    expect(pending.map((p) => p.id)).toEqual([asked.properties.id]);
    expect(fs.existsSync(path.join(oc.projectDir, 'x'))).toBe(false);

    await c.replyPermission(asked.properties.id, 'once');
    await waitFor(() => fs.existsSync(path.join(oc.projectDir, 'x')), { timeoutMs: 20_000, message: 'file x' });
    await ev.waitFor((e) => e.type === 'session.idle' && e.properties.sessionID === session.id, { timeoutMs: 60_000 });
    console.info(`[timing] permission asked after ${tAsked} ms, turn done ${Date.now() - t0} ms`);

    const replied = ev.list.find((e) => e.type === 'permission.replied');
    expect(replied?.properties).toEqual({ sessionID: session.id, requestID: asked.properties.id, reply: 'once' });
    expect(await c.permissions()).toEqual([]);
    await expect(c.replyPermission(asked.properties.id, 'once')).rejects.toMatchObject({ status: 404 });
    await ev.close();

    const msgs = await c.messages(session.id);
    const bash = msgs.flatMap((m) => m.parts).find((p) => p.type === 'tool' && p.tool === 'bash');
    expect(bash.state.status).toBe('completed');
    expect(assistantText(msgs)).toContain('created x');
  });
});
