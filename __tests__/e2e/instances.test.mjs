// One serving plugin instance per directory per process, against real OpenCode 1.18.33
// (issue 11 item 2): the global config names c2c-bridge by one spec (a separate copy of the
// package, as an install would place it, `peerPermissions: allow`), the project config by
// another (this checkout, `peerPermissions: ask`). OpenCode loads both copies in one process
// for the directory. Expected: one clear log line naming both, one peer message injected once,
// and the project's `ask` honoured (a peer-triggered bash request stays pending).
//
// (An npm-style name could not be exercised here: OpenCode tries to install it from the
// registry, and the tests stay offline. The mechanism is keyed on the directory in a
// process-wide table, not on how a spec resolves.)
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { client, startMockModel, startOpencode, seedConfigDir, waitFor, REPO_ROOT } from './harness/index.mjs';

const addon = createRequire(import.meta.url)('../../index.js');
const PENDING_WATCH_MS = 2500;

let mock, tmp;
beforeAll(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'c2c-twice-'));
  mock = await startMockModel({
    script: (r) => {
      if (r.lastIsToolResult) return { text: 'done.' };
      const run = /RUN:\[([^\]]+)\]/.exec(r.lastUserText);
      if (run) return { toolCalls: [{ name: 'bash', arguments: { command: run[1], description: 'run it' } }] };
      return { text: 'nothing to do.' };
    },
  });
});
afterAll(async () => {
  await mock?.stop();
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
});

/** A second copy of the package (as an install would place it), with the built addon. */
function copyPackage(dest) {
  fs.mkdirSync(dest, { recursive: true });
  // What npm would install: package.json's `files`, plus the host binary.
  const pkg = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8'));
  fs.copyFileSync(path.join(REPO_ROOT, 'package.json'), path.join(dest, 'package.json'));
  for (const f of pkg.files) fs.cpSync(path.join(REPO_ROOT, f), path.join(dest, f), { recursive: true });
  for (const f of fs.readdirSync(REPO_ROOT).filter((f) => f.endsWith('.node'))) {
    fs.copyFileSync(path.join(REPO_ROOT, f), path.join(dest, f));
  }
}

describe('the package named twice (global + project config) for one directory', () => {
  test('one instance serves: one log line naming both, one injection, the project ask honoured', async () => {
    const brokerRoot = path.join(tmp, 'broker');
    fs.mkdirSync(brokerRoot, { mode: 0o700 });
    const ocRoot = path.join(tmp, 'oc');
    const globalCopy = path.join(tmp, 'global-install', 'c2c-bridge');
    copyPackage(globalCopy);
    const globalDir = path.join(ocRoot, 'config', 'opencode');
    seedConfigDir(globalDir);
    fs.writeFileSync(
      path.join(globalDir, 'opencode.json'),
      JSON.stringify({ plugin: [[pathToFileURL(globalCopy).href, { alias: 'bob', brokerRoot, peerPermissions: 'allow' }]] }),
    );
    const oc = await startOpencode({
      root: ocRoot,
      modelBaseURL: mock.baseURL('twice'),
      permission: { bash: 'ask' },
      plugins: [[REPO_ROOT, { alias: 'bob', brokerRoot, peerPermissions: 'ask' }]],
    });
    const alice = addon.Broker.open({ sessionId: 'ses_peer_alice', alias: 'alice', root: brokerRoot, directory: tmp, pid: process.pid });
    try {
      const c = client(oc);
      const ev = await c.events();
      const s = await c.createSession({ title: 'twice' });
      const reg = await waitFor(() => addon.listRegistrations(brokerRoot).find((r) => r.sessionId === s.id), { message: 'registration' });
      // One registration for the session, not one per copy.
      expect(addon.listRegistrations(brokerRoot).filter((r) => r.sessionId === s.id)).toHaveLength(1);

      const lines = oc.logs().split('\n').filter((l) => l.startsWith('[c2c-bridge]') && l.includes('loaded 2 times for'));
      expect(lines, oc.logs().slice(-3000)).toHaveLength(1);
      expect(lines[0]).toContain(globalCopy);
      expect(lines[0]).toContain(REPO_ROOT);
      expect(lines[0]).toContain('peerPermissions=ask');

      const sent = alice.send(reg.alias, 'please RUN:[echo twice-loaded]');
      const asked = await ev.waitFor((e) => e.type === 'permission.asked' && e.properties.sessionID === s.id, { timeoutMs: 30_000 });
      // `ask` (the project's): nobody answers it.
      await new Promise((r) => setTimeout(r, PENDING_WATCH_MS));
      expect((await c.permissions()).map((p) => p.id)).toContain(asked.properties.id);
      expect(ev.list.filter((e) => e.type === 'permission.replied' && e.properties.sessionID === s.id)).toEqual([]);
      await c.replyPermission(asked.properties.id, 'reject');
      await c.waitIdle(s.id);

      const peer = (await c.messages(s.id))
        .filter((m) => m.info.role === 'user')
        .flatMap((m) => m.parts.filter((p) => p.type === 'text' && p.metadata?.peerMessage));
      expect(peer.map((p) => p.metadata.peerMessage.messageId)).toEqual([sent.messageId]);
      expect(alice.receipts(10).find((r) => r.messageId === sent.messageId)?.status).toBe('delivered');
      await ev.close();
    } finally {
      alice.close();
      await oc.stop();
    }
  });
});
