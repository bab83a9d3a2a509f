// The NATS relay against real OpenCode 1.18.33 (issue 17): two `opencode serve` instances on
// two broker roots, connected only through a real nats-server (two connector processes run
// by the CLI), exchange a peer message; under `inbound: auto` the remote one is held.
// threats.md: Identity (a remote sender is alias@node, never local), Delivery.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { client, startMockModel, startOpencode, waitFor, REPO_ROOT } from './harness/index.mjs';
import { natsServerPath, startConnector, startNats, writeCreds } from './relay/nats.mjs';

const addon = createRequire(import.meta.url)('../../index.js');
const haveNats = natsServerPath() !== null;
if (!haveNats) console.log('SKIP relay e2e: nats-server not installed (apt-get install nats-server); .ci/run installs it');

const peerParts = (msgs) =>
  msgs.filter((m) => m.info.role === 'user').flatMap((m) => m.parts.filter((p) => p.type === 'text' && p.metadata?.peerMessage));

describe.skipIf(!haveNats)('relay between two OpenCode instances on two broker roots', () => {
  let mock, ocA, ocB, tmp, nats, connA, connB, rootA, rootB;

  beforeAll(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'c2c-e2e-relay-'));
    rootA = path.join(tmp, 'broker-a');
    rootB = path.join(tmp, 'broker-b');
    fs.mkdirSync(rootA, { mode: 0o700 });
    fs.mkdirSync(rootB, { mode: 0o700 });
    nats = await startNats(addon, tmp, ['a', 'b']);
    connA = startConnector({ url: nats.url, root: rootA, node: 'a', creds: writeCreds(tmp, 'a') });
    connB = startConnector({ url: nats.url, root: rootB, node: 'b', creds: writeCreds(tmp, 'b') });
    mock = await startMockModel({
      script: (r) => {
        const text = r.lastUserText;
        if (r.lastIsToolResult) return { text: 'ok.' };
        const m = /send ([\w.@-]+) (.+)$/.exec(text);
        if (m) return { toolCalls: [{ name: 'peer_send', arguments: { to: m[1], text: m[2] } }] };
        if (text.includes('[c2c-frame')) return { text: 'noted.' };
        return { text: 'fine.' };
      },
    });
    [ocA, ocB] = await Promise.all([
      startOpencode({ modelBaseURL: mock.baseURL('a'), plugins: [[REPO_ROOT, { alias: 'alice', brokerRoot: rootA }]] }),
      startOpencode({ modelBaseURL: mock.baseURL('b'), plugins: [[REPO_ROOT, { alias: 'bob', brokerRoot: rootB, inbound: 'auto' }]] }),
    ]);
  }, 120_000);

  afterAll(async () => {
    await Promise.allSettled([ocA?.stop(), ocB?.stop()]);
    await Promise.allSettled([connA?.stop(), connB?.stop()]);
    await nats?.stop();
    await mock?.stop();
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  test('a message crosses the relay and is injected, framed as alias@node; auto holds the remote one', async () => {
    const a = client(ocA);
    const b = client(ocB);
    const sa = await a.createSession({ title: 'A' });
    const sb = await b.createSession({ title: 'B' });
    // Each root sees the other's peer as alias@node, through presence only.
    await waitFor(() => addon.listRegistrations(rootA).some((r) => r.alias === 'bob@b'), { message: 'bob@b visible on a', timeoutMs: 30_000 });
    await waitFor(() => addon.listRegistrations(rootB).some((r) => r.alias === 'alice@a'), { message: 'alice@a visible on b', timeoutMs: 30_000 });

    // b → a: alice's inbound policy is accept; the message is injected, the sender is bob@b.
    await b.promptAsync(sb.id, 'send alice@a the build on the dev box is green');
    const parts = await waitFor(async () => {
      const p = peerParts(await a.messages(sa.id));
      return p.length > 0 ? p : false;
    }, { message: 'relayed message injected in A', timeoutMs: 60_000 });
    expect(parts).toHaveLength(1);
    expect(parts[0].metadata.peerMessage.from).toBe('bob@b');
    expect(parts[0].text).toContain('bob@b');
    expect(parts[0].text).toContain('│ the build on the dev box is green');

    // a → b: bob runs inbound auto; a remote sender is never "same directory", so it is held.
    await a.promptAsync(sa.id, 'send bob@b please rerun the tests');
    const heldFile = path.join(rootB, 'held', `${sb.id}.json`);
    await waitFor(() => fs.existsSync(heldFile) && JSON.parse(fs.readFileSync(heldFile, 'utf8')).length === 1, {
      message: 'remote message held for bob',
      timeoutMs: 60_000,
    });
    const held = JSON.parse(fs.readFileSync(heldFile, 'utf8'))[0];
    expect(held.from_alias).toBe('alice@a');
    expect(held.hold_reason).toContain('auto');
    await new Promise((r) => setTimeout(r, 1500));
    expect(peerParts(await b.messages(sb.id))).toHaveLength(0);
    // The held receipt travels back to alice's root through the relay.
    const receipts = path.join(rootA, 'receipts', `${sa.id}.jsonl`);
    await waitFor(() => fs.existsSync(receipts) && fs.readFileSync(receipts, 'utf8').includes('"held"'), {
      message: 'held receipt back on a',
      timeoutMs: 30_000,
    });
  }, 180_000);

  test('the connectors stop cleanly on SIGTERM', async () => {
    expect(await connB.stop()).toBe(0);
    expect(connB.output()).toContain('relay stopped');
    expect(await connA.stop()).toBe(0);
  }, 30_000);
});
