// Loop protection against real OpenCode 1.18.33 (threats.md: Loops and floods): three sessions
// whose scripted models answer every peer message with a NEW peer_send to the next one
// (A→B→C→A→…). Each message sent from a peer-triggered turn inherits the triggering message's
// via chain (Rust provenance), so the chain stops at the 4-hop limit instead of looping.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { client, startMockModel, startOpencode, waitFor, REPO_ROOT } from './harness/index.mjs';

const addon = createRequire(import.meta.url)('../../index.js');
const NEXT = { a: 'bob', b: 'carol', c: 'alice' };

const peerParts = (msgs) =>
  msgs.filter((m) => m.info.role === 'user').flatMap((m) => m.parts.filter((p) => p.type === 'text' && p.metadata?.peerMessage));
const toolParts = (msgs, tool) => msgs.flatMap((m) => m.parts).filter((p) => p.type === 'tool' && p.tool === tool);

describe('relay loops stop at the hop limit', () => {
  let mock, oc, brokerRoot, tmp;

  beforeAll(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'c2c-e2e-loops-'));
    brokerRoot = path.join(tmp, 'broker');
    fs.mkdirSync(brokerRoot, { mode: 0o700 });
    let n = 0;
    mock = await startMockModel({
      script: (r) => {
        if (r.lastIsToolResult) return { text: 'done.' };
        const text = r.lastUserText;
        // every peer message (and the kick-off) gets a fresh message to the next session
        if (text.includes('[c2c-frame') || text.includes('start the relay')) {
          n += 1;
          return { toolCalls: [{ name: 'peer_send', arguments: { to: NEXT[r.instance], text: `relay step ${n} from ${r.instance}` } }] };
        }
        return { text: 'fine.' };
      },
    });
    oc = {};
    const aliases = { a: 'alice', b: 'bob', c: 'carol' };
    await Promise.all(
      Object.keys(aliases).map(async (k) => {
        oc[k] = await startOpencode({ modelBaseURL: mock.baseURL(k), plugins: [[REPO_ROOT, { alias: aliases[k], brokerRoot }]] });
      }),
    );
  });

  afterAll(async () => {
    await Promise.allSettled(Object.values(oc ?? {}).map((o) => o.stop()));
    await mock?.stop();
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  test('A→B→C→A→B is delivered, the fifth hop is refused, and the relay stops', async () => {
    const c = { a: client(oc.a), b: client(oc.b), c: client(oc.c) };
    const s = {};
    for (const k of ['a', 'b', 'c']) s[k] = await c[k].createSession({ title: k });
    await waitFor(() => addon.listRegistrations(brokerRoot).filter((r) => r.alive).length === 3, { message: 'three registrations' });

    await c.a.promptAsync(s.a.id, 'start the relay');

    // bob receives twice (hop 1 and hop 4), and his second turn's peer_send is refused
    const refused = await waitFor(async () => {
      const tools = toolParts(await c.b.messages(s.b.id), 'peer_send');
      const bad = tools.find((t) => t.state?.status === 'error');
      return bad ?? false;
    }, { message: 'bob hits the hop limit', timeoutMs: 60_000 });
    expect(String(refused.state.error)).toContain('E_HOP_LIMIT');

    // quiescence: nothing more moves for a while
    await new Promise((r) => setTimeout(r, 3000));
    const counts = {};
    const vias = [];
    for (const k of ['a', 'b', 'c']) {
      const parts = peerParts(await c[k].messages(s[k].id));
      counts[k] = parts.length;
      for (const p of parts) vias.push(p.metadata.peerMessage.via.length);
    }
    expect(counts).toEqual({ a: 1, b: 2, c: 1 });
    expect(vias.sort()).toEqual([1, 2, 3, 4]);
    const receipts = fs.readFileSync(path.join(brokerRoot, 'receipts', `${s.b.id}.jsonl`), 'utf8');
    expect(receipts).toContain('"status":"refused"');
    // carol got nothing after hop 2: the chain really ended
    expect(peerParts(await c.c.messages(s.c.id))).toHaveLength(1);
  });
});
