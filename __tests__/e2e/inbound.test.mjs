// Inbound gating against real OpenCode 1.18.33 (issue: inbound gating, held inbox, receipts):
// `hold` keeps a peer message out of the session until `/peers-inbox accept 1`; `refuse` sends
// the sender a framed refused receipt. threats.md: Delivery, Prompt injection (held listing framed).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { client, startMockModel, startOpencode, waitFor, REPO_ROOT } from './harness/index.mjs';

const addon = createRequire(import.meta.url)('../../index.js');

const peerParts = (msgs) =>
  msgs.filter((m) => m.info.role === 'user').flatMap((m) => m.parts.filter((p) => p.type === 'text' && p.metadata?.peerMessage));

describe('inbound policy in real OpenCode', () => {
  let mock, ocA, ocB, ocC, brokerRoot, tmp;

  beforeAll(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'c2c-e2e-inbound-'));
    brokerRoot = path.join(tmp, 'broker');
    fs.mkdirSync(brokerRoot, { mode: 0o700 });
    mock = await startMockModel({
      script: (r) => {
        const text = r.lastUserText;
        if (r.lastIsToolResult) return { text: 'ok.' };
        if (r.instance === 'a') {
          const m = /send (\w+) (.+)$/.exec(text);
          if (m) return { toolCalls: [{ name: 'peer_send', arguments: { to: m[1], text: m[2] } }] };
        }
        if (text.includes('held peer messages')) return { text: 'Here is your held inbox.' };
        if (text.includes('[c2c-frame')) return { text: 'noted.' };
        return { text: 'fine.' };
      },
    });
    [ocA, ocB, ocC] = await Promise.all([
      startOpencode({ modelBaseURL: mock.baseURL('a'), plugins: [[REPO_ROOT, { alias: 'alice', brokerRoot }]] }),
      startOpencode({ modelBaseURL: mock.baseURL('b'), plugins: [[REPO_ROOT, { alias: 'bob', brokerRoot, inbound: 'hold' }]] }),
      startOpencode({ modelBaseURL: mock.baseURL('c'), plugins: [[REPO_ROOT, { alias: 'carol', brokerRoot, inbound: 'refuse' }]] }),
    ]);
  });

  afterAll(async () => {
    await Promise.allSettled([ocA?.stop(), ocB?.stop(), ocC?.stop()]);
    await mock?.stop();
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  test('hold: the message waits until /peers-inbox accept 1, then it is injected', async () => {
    const a = client(ocA);
    const b = client(ocB);
    const sa = await a.createSession({ title: 'A' });
    const sb = await b.createSession({ title: 'B' });
    await waitFor(() => addon.listRegistrations(brokerRoot).some((r) => r.alias === 'bob'), { message: 'bob registered' });

    await a.promptAsync(sa.id, 'send bob please review PR 7');
    const heldFile = path.join(brokerRoot, 'held', `${sb.id}.json`);
    await waitFor(() => fs.existsSync(heldFile) && JSON.parse(fs.readFileSync(heldFile, 'utf8')).length === 1, {
      message: 'message held for bob',
      timeoutMs: 30_000,
    });
    // Held, not shown: give delivery a moment, then check B's transcript has no peer message.
    await new Promise((r) => setTimeout(r, 1500));
    expect(peerParts(await b.messages(sb.id))).toHaveLength(0);

    await b.call(`/session/${sb.id}/command`, { method: 'POST', json: { command: 'peers-inbox', arguments: 'accept 1' } });
    const parts = await waitFor(async () => {
      const p = peerParts(await b.messages(sb.id));
      return p.length > 0 ? p : false;
    }, { message: 'released message injected', timeoutMs: 30_000 });
    expect(parts).toHaveLength(1);
    expect(parts[0].metadata.peerMessage.from).toBe('alice');
    expect(parts[0].text).toContain('│ please review PR 7');
    expect(JSON.parse(fs.readFileSync(heldFile, 'utf8'))).toEqual([]);
    // alice's receipts: held, then delivered — written once OpenCode has stored the injected
    // message (issue 11), which can be a moment after it shows in the transcript read above.
    const statuses = () => {
      const f = path.join(brokerRoot, 'receipts', `${sa.id}.jsonl`);
      return fs.readFileSync(f, 'utf8').trim().split('\n').map((l) => JSON.parse(l).status);
    };
    await waitFor(() => statuses().length >= 2, { message: 'delivered receipt', timeoutMs: 30_000 });
    expect(statuses()).toEqual(['held', 'delivered']);
  });

  test('refuse: the sender sees a framed refused receipt in its session', async () => {
    const a = client(ocA);
    const c = client(ocC);
    const sa = await a.createSession({ title: 'A2' });
    const sc = await c.createSession({ title: 'C' });
    await waitFor(() => addon.listRegistrations(brokerRoot).some((r) => r.alias === 'carol'), { message: 'carol registered' });
    await a.promptAsync(sa.id, 'send carol hello carol');
    const notice = await waitFor(async () => {
      const p = peerParts(await a.messages(sa.id)).filter((x) => x.metadata.peerMessage.from === 'c2c-system');
      return p.length > 0 ? p[0] : false;
    }, { message: 'refused notice in A', timeoutMs: 30_000 });
    expect(notice.text).toContain('refused');
    expect(notice.text.split('\n').filter((l) => l.startsWith('[c2c-frame ')).length).toBe(2);
    expect(peerParts(await c.messages(sc.id))).toHaveLength(0);
  });
});
