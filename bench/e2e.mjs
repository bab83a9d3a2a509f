// `npm run bench:e2e`: end to end in real OpenCode 1.18.33 (the e2e harness, two `opencode
// serve` instances with the plugin sharing one broker root, a scripted mock model).
//
// One sample: session A's model calls `peer_send` to bob; we measure from the moment A's
// peer_send tool starts (the tool part's `state.time.start`, OpenCode's Date.now() in A) to
//  - "visible": the moment our `GET /session/:id/message` on B first returns the framed
//    message (our wall clock when the response arrived; the GET is issued on each B event, so
//    this is an upper bound by one GET round trip, never a polling interval);
//  - "created": B's stored user message `time.created` (OpenCode's Date.now() in B).
// All clocks are the same machine's wall clock in ms. A benchmark: it asserts nothing.
// Writes bench/results-e2e.json (folded into bench/RESULTS.md by the next `npm run bench`).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { client, startMockModel, startOpencode, REPO_ROOT } from '../__tests__/e2e/harness/index.mjs';
import { fmt, machine, mdTable, stats, textTable } from './lib.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const SAMPLES = Number(process.env.BENCH_E2E_SAMPLES ?? 20);
const WARMUP = 2;
const ANCHOR = { name: 'opencode-plugin-peers 0.2.2 (quoted from issue 7, not measured here)', median: 59.5, p90: 80 };
const GOAL_MEDIAN = 15;
const wall = () => performance.timeOrigin + performance.now();
const started = Date.now();

// The plugin is loaded from plugin/dist (package.json "exports": "./server").
const dist = path.join(REPO_ROOT, 'plugin', 'dist', 'index.mjs');
const srcNewest = Math.max(...fs.readdirSync(path.join(REPO_ROOT, 'plugin', 'src')).map((f) => fs.statSync(path.join(REPO_ROOT, 'plugin', 'src', f)).mtimeMs));
if (!fs.existsSync(dist) || fs.statSync(dist).mtimeMs < srcNewest) {
  console.log('building plugin/dist (tsc -p plugin)…');
  execFileSync(path.join(REPO_ROOT, 'node_modules', '.bin', 'tsc'), ['-p', path.join(REPO_ROOT, 'plugin')], { stdio: 'inherit' });
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'c2c-bench-e2e-'));
const brokerRoot = path.join(tmp, 'broker');
fs.mkdirSync(brokerRoot, { mode: 0o700 });
const M = machine(brokerRoot);
console.log(`c2c-bridge e2e bench — ${M.cores} cores, ${M.kernel}, broker root fs ${M.rootFs}, Node ${M.node}`);

const mock = await startMockModel({
  script: (r) => {
    const text = r.lastUserText;
    if (r.instance === 'a') {
      if (r.lastIsToolResult) return { text: 'A: sent.' };
      const m = /send sample (\d+)/.exec(text);
      if (m) return { toolCalls: [{ name: 'peer_send', arguments: { to: 'bob', text: `e2e sample <${m[1]}>` } }] };
    }
    if (r.instance === 'b' && text.includes('[c2c-frame')) return { text: 'B: noted.' };
    return { text: 'ok' };
  },
});
let ocA, ocB;
const cleanup = async () => {
  await Promise.allSettled([ocA?.stop(), ocB?.stop()]);
  await mock.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
};
try {
  [ocA, ocB] = await Promise.all([
    startOpencode({ modelBaseURL: mock.baseURL('a'), plugins: [[REPO_ROOT, { alias: 'alice', brokerRoot }]] }),
    startOpencode({ modelBaseURL: mock.baseURL('b'), plugins: [[REPO_ROOT, { alias: 'bob', brokerRoot }]] }),
  ]);
  const a = client(ocA);
  const b = client(ocB);
  const sa = await a.createSession({ title: 'A' });
  const sb = await b.createSession({ title: 'B' });
  const evB = await b.events();

  const findInB = (msgs, tag) => {
    for (const m of msgs) {
      if (m.info.role !== 'user') continue;
      const p = m.parts.find((x) => x.type === 'text' && x.metadata?.peerMessage && x.text.includes(tag));
      if (p) return { created: m.info.time.created, part: p };
    }
    return null;
  };

  const visible = [];
  const created = [];
  const evented = [];
  for (let i = 0; i < SAMPLES + WARMUP; i++) {
    const tag = `e2e sample <${i}>`;
    const from = evB.list.length;
    await a.promptAsync(sa.id, `send sample ${i}`);
    // On each B event, GET B's messages until the framed message is there.
    let seen = null;
    let visibleAt = 0;
    let idx = from;
    const deadline = Date.now() + 30_000;
    while (!seen) {
      if (Date.now() > deadline) throw new Error(`sample ${i}: not visible in B after 30 s`);
      await evB.waitFor(() => true, { from: idx, timeoutMs: 30_000 });
      idx = evB.list.length;
      const msgs = await b.messages(sb.id);
      visibleAt = wall();
      seen = findInB(msgs, tag);
    }
    const msgsA = await a.messages(sa.id);
    const tool = msgsA
      .flatMap((m) => m.parts)
      .find((p) => p.type === 'tool' && p.tool === 'peer_send' && JSON.stringify(p.state?.input ?? {}).includes(tag));
    const toolStart = tool?.state?.time?.start;
    if (typeof toolStart !== 'number') throw new Error(`sample ${i}: no peer_send tool part with a start time in A`);
    const ev = evB.list.find((e) => e.type === 'message.part.updated' && e.properties?.part?.metadata?.peerMessage && String(e.properties.part.text ?? '').includes(tag));
    if (i >= WARMUP) {
      visible.push(visibleAt - toolStart);
      created.push(seen.created - toolStart);
      if (ev) evented.push(ev.at - toolStart);
    }
    console.log(`  sample ${String(i).padStart(2)}${i < WARMUP ? ' (warm-up)' : ''}: tool start → visible ${fmt(visibleAt - toolStart)}, → created in B ${fmt(seen.created - toolStart)}`);
    await Promise.all([a.waitIdle(sa.id, { intervalMs: 20 }), b.waitIdle(sb.id, { intervalMs: 20 })]);
  }
  await evB.close?.();

  const sv = stats(visible);
  const sc = stats(created);
  const header = ['figure', 'n', 'min', 'median', 'p90', 'max', 'goal', 'verdict', `vs ${ANCHOR.median} ms / ${ANCHOR.p90} ms anchor (median / p90)`];
  const row = (name, s) => [name, s.n, fmt(s.min), fmt(s.median), fmt(s.p90), fmt(s.max), `median ≤ ${GOAL_MEDIAN} ms`, s.median <= GOAL_MEDIAN ? 'meets' : 'MISSES', `${(ANCHOR.median / s.median).toFixed(1)}× / ${(ANCHOR.p90 / s.p90).toFixed(1)}× faster`];
  const se = stats(evented);
  const rows = [
    row('peer_send tool start (A) → visible in GET /session/:id/message (B)', sv),
    row('peer_send tool start (A) → B\'s message.part.updated event received (SSE)', se),
    row('peer_send tool start (A) → user message created in B (OpenCode clock)', sc),
  ];
  const secs = ((Date.now() - started) / 1000).toFixed(1);
  console.log('\n' + textTable(header, rows));
  console.log(`\nanchor: ${ANCHOR.name}: median ${ANCHOR.median} ms, p90 ${ANCHOR.p90} ms\ntotal ${secs} s`);
  const markdown = [
    `Machine: ${M.cores} cores, ${M.kernel}, broker root on ${M.rootFs}, Node ${M.node}; OpenCode 1.18.33 (two \`opencode serve\`, mock model). ${SAMPLES} samples after ${WARMUP} warm-up; run took ${secs} s; generated ${new Date().toISOString()}.`,
    '',
    mdTable(header, rows),
    '',
    `Load average during the run: ${os.loadavg().map((x) => x.toFixed(2)).join(' / ')} on ${M.cores} cores (other sessions share this machine). Caveat: OpenCode stamps the tool part's \`time.start\` when it processes the \`running\` state, which can lag the tool's actual start; negative "created" values show that lag.`,
    '',
    `Anchor: ${ANCHOR.name}: median ${ANCHOR.median} ms, p90 ${ANCHOR.p90} ms. "Visible" is measured by our client: a GET issued on each SSE event of B, stamped when the response arrived (OpenCode's tool start is a Date.now() in A; same machine clock).`,
  ].join('\n');
  fs.writeFileSync(
    path.join(HERE, 'results-e2e.json'),
    JSON.stringify({ generated: new Date().toISOString(), machine: M, samples: SAMPLES, anchor: ANCHOR, visible: sv, evented: se, created: sc, load: os.loadavg(), rawVisibleMs: visible, rawCreatedMs: created, markdown }, null, 2) + '\n',
  );
  console.log('wrote bench/results-e2e.json');
} finally {
  await cleanup();
}
process.exit(0);
