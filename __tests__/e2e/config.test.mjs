// Issue 18 against real OpenCode 1.18.33: configuration that fails safe, and stable aliases.
// (a) An unknown option key (a misspelt `peerPermissions`) turns auto-answers off: a
//     peer-triggered bash call, which the default `allow` would answer "once", stays pending
//     (gate reason `config-error`), and the plugin prints exactly one clear line about it.
// (b) A session keeps its alias across a restart of `opencode serve`, whatever order the
//     sessions come back in, and a new session takes the next free suffix.
// threats.md families: Permission authority (a config mistake must not leave the most
// permissive mode on), Identity (an alias reaching a different conversation after a restart).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { client, startMockModel, startOpencode, waitFor, REPO_ROOT } from './harness/index.mjs';

const addon = createRequire(import.meta.url)('../../index.js');
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
/** How long "stays pending" is watched for: the gate decides in milliseconds. */
const PENDING_WATCH_MS = 2500;

let mock;
const cleanups = [];
beforeAll(async () => {
  mock = await startMockModel({
    script: (r) => {
      if (r.lastIsToolResult) return { text: 'done.' };
      const run = /RUN:\[([^\]]+)\]/.exec(r.lastUserText);
      if (run) return { toolCalls: [{ name: 'bash', arguments: { command: run[1], description: 'run it' } }] };
      return { text: 'ok.' };
    },
  });
}, 60_000);
afterAll(async () => {
  for (const c of cleanups.reverse()) await c().catch(() => {});
  await mock?.stop();
});

function tmpRoot(prefix) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  cleanups.push(async () => fs.rmSync(tmp, { recursive: true, force: true }));
  const brokerRoot = path.join(tmp, 'broker');
  fs.mkdirSync(brokerRoot, { mode: 0o700 });
  return { tmp, brokerRoot };
}

describe('an unknown option key turns auto-answers off', () => {
  test('a peer-triggered request that `allow` would answer stays pending; one clear log line', async () => {
    const { tmp, brokerRoot } = tmpRoot('c2c-cfg-');
    const oc = await startOpencode({
      modelBaseURL: mock.baseURL('cfg'),
      permission: { bash: 'ask' },
      plugins: [[REPO_ROOT, { alias: 'bob', brokerRoot, peerPermision: 'allow' }]],
    });
    cleanups.push(() => oc.stop());
    const alice = addon.Broker.open({ sessionId: 'ses_cfg_alice', alias: 'alice', root: brokerRoot, directory: tmp, pid: process.pid });
    cleanups.push(async () => alice.close());
    const c = client(oc);
    const events = await c.events();
    const s = await c.createSession({ title: 'cfg' });
    const reg = await waitFor(() => addon.listRegistrations(brokerRoot).find((r) => r.sessionId === s.id), { message: 'registration' });

    alice.send(reg.alias, 'please RUN:[touch peer-made.txt]');
    const asked = await events.waitFor((e) => e.type === 'permission.asked' && e.properties.sessionID === s.id, { timeoutMs: 30_000 });
    const id = asked.properties.id;
    await sleep(PENDING_WATCH_MS);
    expect(events.list.some((e) => e.type === 'permission.replied' && e.properties.requestID === id)).toBe(false);
    expect((await c.permissions()).map((p) => p.id)).toContain(id);
    expect(fs.existsSync(path.join(oc.projectDir, 'peer-made.txt'))).toBe(false);
    const decision = fs.readFileSync(path.join(brokerRoot, 'broker.log'), 'utf8').trim().split('\n')
      .map((l) => JSON.parse(l)).find((l) => l.event === 'permission_decision' && l.request === id);
    expect(decision).toMatchObject({ provenance: 'peer', decision: 'leave', reason: 'config-error', mode: 'allow' });

    // Exactly one clear line from the plugin (its stderr), naming the key and the fix.
    const lines = oc.logs().split('\n').filter((l) => l.startsWith('[c2c-bridge]') && l.includes('configuration error'));
    expect(lines).toEqual([
      '[c2c-bridge] error: configuration error in the c2c-bridge options: E_UNKNOWN_OPTION unknown option "peerPermision"; did you mean "peerPermissions"? — auto-answers are OFF: every permission request goes to OpenCode\'s prompt until this is fixed',
    ]);
    await c.replyPermission(id, 'reject');
    await events.waitFor((e) => e.type === 'permission.replied' && e.properties.requestID === id, { timeoutMs: 10_000 });
    await c.waitIdle(s.id);
    await events.close();
  });
});

describe('aliases are stable across a restart of opencode serve', () => {
  test('same session → same alias (in any order); a new session → the next suffix', async () => {
    const { brokerRoot } = tmpRoot('c2c-alias-');
    const plugins = [[REPO_ROOT, { alias: 'backend', brokerRoot }]];
    const aliasOf = (sid) => addon.listRegistrations(brokerRoot).find((r) => r.sessionId === sid && r.alive)?.alias;

    const oc1 = await startOpencode({ modelBaseURL: mock.baseURL('al'), plugins, keepTemp: true });
    cleanups.push(async () => fs.rmSync(oc1.root, { recursive: true, force: true }));
    cleanups.push(() => oc1.stop());
    const c1 = client(oc1);
    const s1 = await c1.createSession({ title: 'one' });
    await waitFor(() => aliasOf(s1.id), { message: 's1 registered' });
    const s2 = await c1.createSession({ title: 'two' });
    await waitFor(() => aliasOf(s2.id), { message: 's2 registered' });
    expect([aliasOf(s1.id), aliasOf(s2.id)]).toEqual(['backend', 'backend-2']);
    await oc1.stop();
    const afterStop = addon.listRegistrations(brokerRoot).filter((r) => r.alive);
    expect(afterStop).toEqual([]);

    /**
     * Put the newer session first in the root's files, as a later re-registration of the
     * older one would: c2c's rule then gave the newer session the base alias (the issue's
     * `backend` → `backend-2` → … renumbering).
     */
    const newestFirst = () => {
      for (const f of ['registry.json', 'c2c-bridge-aliases.json']) {
        const file = path.join(brokerRoot, f);
        if (!fs.existsSync(file)) continue;
        const records = JSON.parse(fs.readFileSync(file, 'utf8'));
        records.sort((a, b) => (a.session_id === s2.id ? -1 : b.session_id === s2.id ? 1 : 0));
        fs.writeFileSync(file, JSON.stringify(records), { mode: 0o600 });
      }
    };
    for (const round of [1, 2]) {
      newestFirst();
      const oc = await startOpencode({ modelBaseURL: mock.baseURL('al'), plugins, root: oc1.root });
      cleanups.push(() => oc.stop());
      const c = client(oc);
      // The plugin restores both sessions at startup; using the newer one first changes nothing.
      await c.prompt(s2.id, 'hello again');
      await waitFor(() => aliasOf(s1.id) && aliasOf(s2.id), { message: `both restored (round ${round})` });
      expect([aliasOf(s1.id), aliasOf(s2.id)]).toEqual(['backend', 'backend-2']);
      if (round === 2) {
        const s3 = await c.createSession({ title: 'three' });
        await waitFor(() => aliasOf(s3.id), { message: 's3 registered' });
        expect(aliasOf(s3.id)).toBe('backend-3');
      }
      await oc.stop();
    }
  });
});

describe('an unbuilt checkout loaded as a plugin', () => {
  test('logs one line saying to run `npm run build`; OpenCode keeps working', async () => {
    const { tmp } = tmpRoot('c2c-unbuilt-');
    // A checkout as cloned: package.json and the committed entry point, no plugin/dist/.
    const checkout = path.join(tmp, 'c2c-bridge');
    fs.mkdirSync(path.join(checkout, 'plugin'), { recursive: true });
    fs.copyFileSync(path.join(REPO_ROOT, 'package.json'), path.join(checkout, 'package.json'));
    fs.copyFileSync(path.join(REPO_ROOT, 'plugin', 'server.mjs'), path.join(checkout, 'plugin', 'server.mjs'));
    const oc = await startOpencode({ modelBaseURL: mock.baseURL('unbuilt'), plugins: [checkout] });
    cleanups.push(() => oc.stop());
    const c = client(oc);
    const s = await c.createSession({ title: 'still works' });
    await c.prompt(s.id, 'hello');
    await c.waitIdle(s.id);
    const lines = oc.logs().split('\n').filter((l) => l.startsWith('[c2c-bridge]'));
    expect(lines).toEqual([
      `[c2c-bridge] error: disabled: this checkout is not built (${path.join(checkout, 'plugin', 'dist', 'index.mjs')} is missing): run \`npm run build\` in ${checkout}/, then restart OpenCode. OpenCode continues without c2c-bridge.`,
    ]);
  });
});
