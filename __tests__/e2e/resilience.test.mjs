// Resilience against real OpenCode 1.18.33:
//   (a) no `.node` file: the plugin logs one clear error, returns no hooks, OpenCode keeps serving;
//   (b) the same with a corrupt `.node` (garbage bytes under the right file name);
//   (c) plugin restart dedup: a message already injected into a session, put back in the inbox
//       (a crash between promptAsync and ack), is not injected again after OpenCode restarts on
//       the same data dirs; it is acknowledged instead.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { afterAll, afterEach, beforeAll, describe, expect, test } from 'vitest';
import { client, startMockModel, startOpencode, waitFor, REPO_ROOT } from './harness/index.mjs';

const addon = createRequire(import.meta.url)('../../index.js');
const DISABLED = 'disabled: the native addon could not be loaded';
const NODE_FILE = 'c2c-bridge.linux-x64-gnu.node';

/** Copy the package as npm would install it, minus the `.node` file. */
function copyPackageWithoutAddon(dest) {
  fs.mkdirSync(dest, { recursive: true });
  const pkg = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8'));
  fs.copyFileSync(path.join(REPO_ROOT, 'package.json'), path.join(dest, 'package.json'));
  for (const f of pkg.files) fs.cpSync(path.join(REPO_ROOT, f), path.join(dest, f), { recursive: true });
  expect(fs.readdirSync(dest).filter((f) => f.endsWith('.node'))).toEqual([]);
}

/** Text of the assistant parts of a session. */
async function assistantText(c, sid) {
  return (await c.messages(sid))
    .filter((m) => m.info.role === 'assistant')
    .flatMap((m) => m.parts)
    .filter((p) => p.type === 'text')
    .map((p) => p.text)
    .join('\n');
}

/** Peer-message parts of a session's user messages. */
async function peerParts(c, sid) {
  return (await c.messages(sid))
    .filter((m) => m.info.role === 'user')
    .flatMap((m) => m.parts.filter((p) => p.type === 'text' && p.metadata?.peerMessage));
}

const count = (s, needle) => s.split(needle).length - 1;

let mock;
const tmps = [];
const servers = [];
beforeAll(async () => {
  mock = await startMockModel({
    script: (r) => {
      const t = r.lastUserText;
      if (t.includes('[c2c-frame')) return { text: 'B: read the peer message.' };
      return { text: `reply to: ${t.slice(0, 60)}` };
    },
  });
});
afterEach(async () => {
  await Promise.allSettled(servers.splice(0).map((s) => s.stop()));
});
afterAll(async () => {
  await mock?.stop();
  for (const t of tmps) fs.rmSync(t, { recursive: true, force: true });
});
function tmpdir(prefix) {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  tmps.push(d);
  return d;
}

describe('the addon cannot load: OpenCode keeps serving sessions', () => {
  for (const variant of ['missing', 'corrupt']) {
    test(`${variant} .node file`, async () => {
      const pkg = path.join(tmpdir(`c2c-pkg-${variant}-`), 'c2c-bridge');
      copyPackageWithoutAddon(pkg);
      if (variant === 'corrupt') {
        const junk = Buffer.alloc(4096);
        for (let i = 0; i < junk.length; i++) junk[i] = (i * 131 + 7) & 0xff;
        fs.writeFileSync(path.join(pkg, NODE_FILE), junk);
      }
      const brokerRoot = path.join(tmpdir('c2c-broker-'), 'broker');
      const oc = await startOpencode({ modelBaseURL: mock.baseURL(variant), plugins: [[pkg, { alias: 'alice', brokerRoot }]] });
      servers.push(oc);
      const c = client(oc);
      const s = await c.createSession({ title: variant });
      await c.prompt(s.id, `hello with a ${variant} addon`);
      expect(await assistantText(c, s.id)).toContain(`reply to: hello with a ${variant} addon`);
      // The plugin registered nothing and offered no tools.
      expect(fs.existsSync(path.join(brokerRoot, 'registry.json'))).toBe(false);
      const turn = mock.turnRequests().filter((r) => r.instance === variant);
      expect(turn.length).toBeGreaterThan(0);
      for (const r of turn) expect(r.toolNames.filter((n) => n.startsWith('peer_'))).toEqual([]);

      // The error shows once per plugin instance, in two forms: the plugin's own stderr line and
      // OpenCode's log line from client.app.log (`level=ERROR … message="disabled: …"`).
      const stderrLine = `[c2c-bridge] error: ${DISABLED}`;
      const forms = () => {
        const lines = oc.logs().split('\n');
        return {
          stderr: lines.filter((l) => l.startsWith(stderrLine)),
          appLog: lines.filter((l) => l.includes(`message="${DISABLED}`) && l.includes('level=ERROR')),
          other: lines.filter((l) => l.includes(DISABLED) && !l.startsWith(stderrLine) && !l.includes(`message="${DISABLED}`)),
        };
      };
      let f = await waitFor(() => (forms().appLog.length >= 1 ? forms() : false), { message: 'app.log line' });
      expect(f.stderr, oc.logs()).toHaveLength(1);
      expect(f.appLog, oc.logs()).toHaveLength(1);
      expect(f.other).toEqual([]);
      // It names the platform, the package that should provide the binary and, for a corrupt
      // file, the loader's reason (binding.js; napi-rs's own "Cannot find native binding" is gone).
      expect(f.stderr[0]).toContain('the prebuilt binary for linux-x64-gnu');
      expect(f.stderr[0]).toMatch(variant === 'missing' ? /is missing: the package c2c-bridge-linux-x64-gnu/ : /does not load: .*invalid ELF header/);
      expect(f.stderr[0]).not.toContain('Cannot find native binding');
      expect(f.stderr[0]).toContain('OpenCode continues without it');

      if (variant === 'missing') {
        // A second project directory in the same process is a second plugin instance: one more
        // error of each form, and that instance serves sessions too.
        const dir2 = path.join(tmpdir('c2c-proj2-'), 'project2');
        fs.mkdirSync(dir2);
        fs.writeFileSync(path.join(dir2, 'opencode.json'), fs.readFileSync(path.join(oc.projectDir, 'opencode.json')));
        const c2 = client({ url: oc.url, projectDir: dir2 });
        const s2 = await c2.createSession({ title: 'second instance' });
        await c2.prompt(s2.id, 'hello from the second directory');
        expect(await assistantText(c2, s2.id)).toContain('reply to: hello from the second directory');
        f = await waitFor(() => (forms().appLog.length >= 2 ? forms() : false), { message: 'second app.log line' });
        expect(f.stderr).toHaveLength(2);
        expect(f.appLog).toHaveLength(2);
      }
      // Nothing else in the log comes from the plugin (no hooks, so no further activity).
      await new Promise((r) => setTimeout(r, 500));
      expect(oc.logs().split('\n').filter((l) => l.startsWith('[c2c-bridge]') && !l.startsWith(stderrLine))).toEqual([]);
    });
  }
});

describe('plugin restart: an already-injected message put back in the inbox is not injected again', () => {
  test('restart OpenCode on the same data dirs; the duplicate is dropped and acknowledged', async () => {
    const brokerRoot = path.join(tmpdir('c2c-broker-'), 'broker');
    fs.mkdirSync(brokerRoot, { mode: 0o700 });
    const plugins = [[REPO_ROOT, { alias: 'bob', brokerRoot }]];
    const ocB = await startOpencode({ modelBaseURL: mock.baseURL('b'), plugins, keepTemp: true });
    servers.push(ocB);
    tmps.push(ocB.root);
    const b = client(ocB);
    const sb = await b.createSession({ title: 'B' });
    await waitFor(() => addon.listRegistrations(brokerRoot).some((r) => r.alias === 'bob' && r.sessionId === sb.id), {
      message: 'bob registered',
    });

    // The test process is the sender.
    const sender = addon.Broker.open({ sessionId: 'ses_test_sender', alias: 'tester', root: brokerRoot });
    try {
      const receipt = sender.send('bob', 'first and only delivery, please');
      const inbox = path.join(brokerRoot, `${sb.id}.inbox.json`);
      const archive = path.join(brokerRoot, 'archive', `${sb.id}.jsonl`);
      const delivered = await waitFor(async () => {
        const parts = await peerParts(b, sb.id);
        return parts.length > 0 ? parts : false;
      }, { message: 'peer message in B', timeoutMs: 30_000 });
      expect(delivered).toHaveLength(1);
      expect(delivered[0].metadata.peerMessage.messageId).toBe(receipt.messageId);
      await b.waitIdle(sb.id);
      await waitFor(() => JSON.parse(fs.readFileSync(inbox, 'utf8')).length === 0, { message: 'inbox drained' });
      const archived = fs.readFileSync(archive, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
      expect(archived.map((m) => m.message_id)).toEqual([receipt.messageId]);

      // Crash between promptAsync and ack, simulated: stop B, put the message back in its inbox.
      await ocB.stop();
      const { drained_at: _a, drained_by: _b, session_id: _c, ...record } = archived[0];
      fs.writeFileSync(inbox, JSON.stringify([record]));

      // OpenCode again, same HOME/XDG dirs and project dir: the session is still there.
      const ocB2 = await startOpencode({ modelBaseURL: mock.baseURL('b'), plugins, root: ocB.root });
      servers.push(ocB2);
      expect(ocB2.projectDir).toBe(ocB.projectDir);
      const b2 = client(ocB2);
      expect((await b2.getSession(sb.id)).id).toBe(sb.id);
      expect(await peerParts(b2, sb.id)).toHaveLength(1);

      // The session becomes active again: the plugin re-registers it and looks at its inbox.
      await b2.prompt(sb.id, 'back after the restart');
      await waitFor(() => JSON.parse(fs.readFileSync(inbox, 'utf8')).length === 0, {
        message: 'duplicate acknowledged',
        timeoutMs: 20_000,
      });
      await b2.waitIdle(sb.id);
      // Give a wrongly scheduled second injection time to show up.
      await new Promise((r) => setTimeout(r, 1500));
      await b2.waitIdle(sb.id);
      const after = await peerParts(b2, sb.id);
      expect(after.map((p) => p.metadata.peerMessage.messageId)).toEqual([receipt.messageId]);
      expect(await assistantText(b2, sb.id)).toContain('reply to: back after the restart');
      expect(ocB2.logs()).toContain(`confirming 1 message(s) already stored in ${sb.id}`);
      // Acknowledged means archived (again) — never dropped on the floor.
      const archived2 = fs.readFileSync(archive, 'utf8').trim().split('\n').map((l) => JSON.parse(l));
      expect(archived2.every((m) => m.message_id === receipt.messageId)).toBe(true);
      expect(addon.listRegistrations(brokerRoot).find((r) => r.alias === 'bob')).toMatchObject({ sessionId: sb.id, pid: ocB2.pid, alive: true });
    } finally {
      sender.close();
    }
  });
});
