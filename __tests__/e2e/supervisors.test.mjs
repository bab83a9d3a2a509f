// The advisory reply path against real OpenCode 1.18.33 (B098, c2c M2/M4; threats.md:
// Permission authority). alice has supervisors ["bob"]. Her typed turn asks permission for a
// bash call; bob is told and answers `permission:<id>:approve-once`. The request must stay
// pending (GET /permission) and the tool must not run; once the request is answered locally,
// bob's advice appears in alice's transcript, framed, as data.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { client, startMockModel, startOpencode, waitFor, REPO_ROOT } from './harness/index.mjs';

const peerParts = (msgs) =>
  msgs.filter((m) => m.info.role === 'user').flatMap((m) => m.parts.filter((p) => p.type === 'text' && p.metadata?.peerMessage));

describe('supervisor replies are advice, never approval', () => {
  let mock, ocA, ocB, brokerRoot, tmp;

  beforeAll(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'c2c-e2e-sup-'));
    brokerRoot = path.join(tmp, 'broker');
    fs.mkdirSync(brokerRoot, { mode: 0o700 });
    mock = await startMockModel({
      script: (r) => {
        const text = r.lastUserText;
        if (r.lastIsToolResult) return { text: 'tool finished.' };
        if (r.instance === 'a' && text.includes('make the marker')) {
          return { toolCalls: [{ name: 'bash', arguments: { command: 'touch supervised-marker.txt', description: 'marker' } }] };
        }
        if (r.instance === 'b') {
          const m = /Permission request (per_[A-Za-z0-9_-]+)/.exec(text);
          if (m) return { toolCalls: [{ name: 'peer_send', arguments: { to: 'alice', text: `permission:${m[1]}:approve-once` } }] };
        }
        return { text: 'noted.' };
      },
    });
    [ocA, ocB] = await Promise.all([
      startOpencode({
        modelBaseURL: mock.baseURL('a'),
        plugins: [[REPO_ROOT, { alias: 'alice', brokerRoot, supervisors: ['bob'] }]],
        permission: { bash: 'ask' },
      }),
      startOpencode({ modelBaseURL: mock.baseURL('b'), plugins: [[REPO_ROOT, { alias: 'bob', brokerRoot }]] }),
    ]);
  });

  afterAll(async () => {
    await Promise.allSettled([ocA?.stop(), ocB?.stop()]);
    await mock?.stop();
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  test('approve-once from a supervisor leaves the request pending; after the local answer it is shown framed', async () => {
    const a = client(ocA);
    const b = client(ocB);
    const sa = await a.createSession({ title: 'A' });
    const sb = await b.createSession({ title: 'B' });
    await a.promptAsync(sa.id, 'please make the marker file');

    const pending = await waitFor(async () => {
      const list = await a.permissions();
      return list.length > 0 ? list[0] : false;
    }, { message: 'bash permission asked', timeoutMs: 30_000 });

    // bob was told, with the request id, and answered approve-once
    await waitFor(async () => (await b.messages(sb.id)).flatMap((m) => m.parts).some((p) => p.type === 'tool' && p.tool === 'peer_send' && p.state?.status === 'completed'), {
      message: 'bob replied',
      timeoutMs: 30_000,
    });
    const slots = JSON.parse(fs.readFileSync(path.join(brokerRoot, 'pending_permissions.json'), 'utf8'));
    expect(slots.map((s) => s.perm_id)).toContain(pending.id);
    expect(slots.find((s) => s.perm_id === pending.id).supervisors).toEqual(['bob']);
    // the reply was checked (valid) at alice's gate and shown in her log, ...
    await waitFor(() => ocA.logs().includes(`approve-once for permission ${pending.id}`), { message: 'advice logged', timeoutMs: 15_000 });
    // ... but it answered nothing: the request is still pending and the tool did not run
    await new Promise((r) => setTimeout(r, 1500));
    expect((await a.permissions()).map((p) => p.id)).toContain(pending.id);
    expect(fs.existsSync(path.join(ocA.projectDir, 'supervised-marker.txt'))).toBe(false);
    expect(peerParts(await a.messages(sa.id))).toHaveLength(0);

    // the human answers locally; when alice's session is idle the advice appears, framed
    await a.replyPermission(pending.id, 'reject');
    const shown = await waitFor(async () => {
      const p = peerParts(await a.messages(sa.id));
      return p.length > 0 ? p[0] : false;
    }, { message: 'advice in the transcript', timeoutMs: 30_000 });
    expect(shown.metadata.peerMessage.from).toBe('bob');
    expect(shown.text).toContain(`│ permission:${pending.id}:approve-once`);
    expect(shown.text.split('\n').filter((l) => l.startsWith('[c2c-frame ')).length).toBe(2);
    expect(fs.existsSync(path.join(ocA.projectDir, 'supervised-marker.txt'))).toBe(false);
    const log = fs.readFileSync(path.join(brokerRoot, 'broker.log'), 'utf8');
    expect(log).toContain('"event":"pending_open"');
    expect(log).toContain('"event":"permission_reply_check"');
  });
});
