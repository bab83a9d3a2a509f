// Issue 13 against real OpenCode 1.18.33: a room post that the c2c 0.8 CLI fans out into a
// session's inbox carries no message_id (tests/fixtures/c2c-0.8/). The plugin must deliver it
// once, framed as a room message, under its derived id (`c2c-derived-…`), acknowledge it by that
// id (archived in c2c's shape, gone from the inbox), and never deliver it again.
// threats.md: Delivery (nothing lost or doubled), Prompt injection (framing on the real path).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { client, startMockModel, startOpencode, waitFor, REPO_ROOT } from './harness/index.mjs';

const addon = createRequire(import.meta.url)('../../index.js');

function peerParts(msgs) {
  return msgs
    .filter((m) => m.info.role === 'user')
    .flatMap((m) => m.parts.filter((p) => p.type === 'text' && p.metadata?.peerMessage));
}

/** Append records to an inbox as c2c does: under an exclusive lockf on `<sid>.inbox.lock`. */
function c2cAppend(root, sessionId, records) {
  const script = [
    'import fcntl,json,os,sys',
    'root,sid,recs=sys.argv[1],sys.argv[2],json.loads(sys.argv[3])',
    'fd=os.open(os.path.join(root,sid+".inbox.lock"),os.O_RDWR|os.O_CREAT,0o644)',
    'fcntl.lockf(fd,fcntl.LOCK_EX)',
    'p=os.path.join(root,sid+".inbox.json")',
    'cur=json.load(open(p)) if os.path.exists(p) else []',
    'tmp=p+".tmp.%d"%os.getpid()',
    'open(tmp,"w").write(json.dumps(cur+recs))',
    'os.chmod(tmp,0o600)',
    'os.rename(tmp,p)',
  ].join('\n');
  const r = spawnSync('python3', ['-c', script, root, sessionId, JSON.stringify(records)], { encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`python3 failed: ${r.stderr}`);
}

const hasPython = spawnSync('python3', ['-c', 'import fcntl'], { stdio: 'ignore' }).status === 0;

describe.skipIf(!hasPython)('a c2c room post without message_id in real OpenCode', () => {
  let mock, oc, brokerRoot, tmp;

  beforeAll(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'c2c-e2e-room-'));
    brokerRoot = path.join(tmp, 'broker');
    fs.mkdirSync(brokerRoot, { mode: 0o700 });
    mock = await startMockModel({
      script: (r) => (r.lastUserText.includes('[c2c-frame') ? { text: 'A: seen.' } : { text: 'A: idle.' }),
    });
    oc = await startOpencode({
      modelBaseURL: mock.baseURL('a'),
      plugins: [[REPO_ROOT, { alias: 'alice', brokerRoot, inbound: 'accept' }]],
    });
  });

  afterAll(async () => {
    await oc?.stop();
    await mock?.stop();
    if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  });

  test('delivered once under its derived id, acknowledged, archived, not redelivered', async () => {
    const a = client(oc);
    const sa = await a.createSession({ title: 'A' });
    await waitFor(() => addon.listRegistrations(brokerRoot).length === 1, { message: 'registration' });

    const post = { from_alias: 'bob', to_alias: 'alice#lobby', content: 'room post from bob', ts: 1796055331.988295 };
    c2cAppend(brokerRoot, sa.id, [post]);

    const parts = await waitFor(async () => {
      const p = peerParts(await a.messages(sa.id));
      return p.length > 0 ? p : false;
    }, { message: 'room post in A', timeoutMs: 30_000 });
    expect(parts).toHaveLength(1);
    const meta = parts[0].metadata.peerMessage;
    expect(meta.from).toBe('bob');
    expect(meta.messageId).toMatch(/^c2c-derived-[0-9a-f]{32}$/);
    expect(parts[0].text).toContain('│ room post from bob');
    expect(parts[0].text).toContain('lobby');
    await a.waitIdle(sa.id);

    // acknowledged by the derived id: gone from the inbox, archived as c2c wrote it
    const inbox = path.join(brokerRoot, `${sa.id}.inbox.json`);
    await waitFor(() => JSON.parse(fs.readFileSync(inbox, 'utf8')).length === 0, { message: 'inbox drained' });
    const archived = fs.readFileSync(path.join(brokerRoot, 'archive', `${sa.id}.jsonl`), 'utf8').trim().split('\n');
    expect(archived).toHaveLength(1);
    expect(JSON.parse(archived[0])).toMatchObject({ ...post, session_id: sa.id });
    expect(JSON.parse(archived[0]).message_id).toBeUndefined();

    // c2c writes the same record again (a retry): it is the same message, not shown twice;
    // a new post is.
    const second = { ...post, content: 'second post', ts: post.ts + 1 };
    c2cAppend(brokerRoot, sa.id, [post, second]);
    await waitFor(async () => peerParts(await a.messages(sa.id)).length >= 2, { message: 'second post in A', timeoutMs: 30_000 });
    await a.waitIdle(sa.id);
    await waitFor(() => JSON.parse(fs.readFileSync(inbox, 'utf8')).length === 0, { message: 'inbox drained again' });
    const texts = peerParts(await a.messages(sa.id)).map((p) => p.text);
    expect(texts.filter((t) => t.includes('room post from bob'))).toHaveLength(1);
    expect(texts.filter((t) => t.includes('second post'))).toHaveLength(1);
  });
});
