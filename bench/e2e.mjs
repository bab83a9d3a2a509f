// `npm run bench:e2e`: end to end in real OpenCode 1.18.33 (the e2e harness, a scripted mock
// model), with OpenCode's own floor measured in the same run.
//
// Three `opencode serve` processes: A and B load the plugin and share one broker root; C loads
// no plugin. Per round, interleaved:
//  - pipeline: A's model calls `peer_send` to bob. We measure from A's tool start to the moment
//    B's `message.part.updated` event carrying the framed message reaches our SSE client.
//    "Tool start" is given twice: OpenCode's `state.time.start` of the tool part (its
//    Date.now() in A, 1 ms resolution) and the plugin's own mark when `execute` is entered.
//  - floor: we POST `prompt_async` to C (no plugin) ourselves, one text part of the framed
//    message's size, and measure until C's `message.part.updated` for it reaches our SSE client.
//    That is what OpenCode needs for a prompt with no plugin at all; the pipeline cannot beat it.
//  - floor with the plugin present: the same POST to B (our plugin loaded, only watching).
// The plugin's timing marks (C2C_BRIDGE_TRACE, plugin/src/trace.mts: ids and times only) split
// our own share: A's viaFor + send, the inotify wake-up in B, B's path up to promptAsync
// (split: the hop into the delivery queue, the Rust inbound gate, the rest), and the synchronous time of our event hook on B's main thread while OpenCode
// delivers the message (the acknowledgement included).
// All clocks are this machine's wall clock in ms. A benchmark: it asserts nothing.
// Writes bench/results-e2e.json (folded into bench/RESULTS.md by the next `npm run bench`).
// Options: BENCH_E2E_SAMPLES (default 20 rounds), BENCH_E2E_QUICK=1 (3 rounds),
// BENCH_E2E_BROKER_PARENT (where the broker root goes; default the temp dir).
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { client, startMockModel, startOpencode, withDirectory, REPO_ROOT } from '../__tests__/e2e/harness/index.mjs';
import { fmt, machine, mdTable, stats, textTable } from './lib.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const SAMPLES = Number(process.env.BENCH_E2E_SAMPLES ?? (process.env.BENCH_E2E_QUICK ? 3 : 20));
const WARMUP = 2;
// Not measured by this bench: the figures of issue 16, from the lead's side-by-side harness.
const ANCHOR = {
  name: 'opencode-plugin-peers 0.2.2',
  text: 'quoted, not measured by this bench: 93–120 ms median (issue 16, measured side by side in one harness; its own quoted 59.5 ms did not reproduce there)',
};
const GOAL_SHARE = 2; // ms, median: our own share
const GOAL_OVER_FLOOR = 5; // ms, median: total minus the same run's no-plugin floor
// performance.now() aligned on a tick of Date.now(), as plugin/src/trace.mts does: the wall
// clock with sub-ms resolution that the plugins' marks use (performance.timeOrigin is not
// comparable across processes: Node's is off by 1–10 ms).
const clockOffset = (() => {
  const d0 = Date.now();
  let d = d0;
  while (d === d0) d = Date.now();
  return d - performance.now();
})();
const wall = () => clockOffset + performance.now();
const started = Date.now();

// The plugin is loaded from plugin/dist (package.json "exports": "./server").
const dist = path.join(REPO_ROOT, 'plugin', 'dist', 'index.mjs');
const srcNewest = Math.max(...fs.readdirSync(path.join(REPO_ROOT, 'plugin', 'src')).map((f) => fs.statSync(path.join(REPO_ROOT, 'plugin', 'src', f)).mtimeMs));
if (!fs.existsSync(dist) || fs.statSync(dist).mtimeMs < srcNewest) {
  console.log('building plugin/dist (tsc -p plugin)…');
  execFileSync(path.join(REPO_ROOT, 'node_modules', '.bin', 'tsc'), ['-p', path.join(REPO_ROOT, 'plugin')], { stdio: 'inherit' });
}

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'c2c-bench-e2e-'));
// BENCH_E2E_BROKER_PARENT puts the broker root elsewhere (e.g. /dev/shm, a file system that
// orders data before a rename: the inbox write then renames first); OpenCode's own files stay
// in the temp dir. The file system used is printed and recorded.
const brokerParent = process.env.BENCH_E2E_BROKER_PARENT ? fs.mkdtempSync(path.join(process.env.BENCH_E2E_BROKER_PARENT, 'c2c-bench-e2e-')) : tmp;
const brokerRoot = path.join(brokerParent, 'broker');
fs.mkdirSync(brokerRoot, { mode: 0o700 });
const traceA = path.join(tmp, 'trace-a.jsonl');
const traceB = path.join(tmp, 'trace-b.jsonl');
const M = machine(brokerRoot);
console.log(`c2c-bridge e2e bench — ${M.cores} cores, ${M.kernel}, broker root fs ${M.rootFs}, Node ${M.node}, load ${M.loadavg.join(' ')}`);

/** A minimal SSE reader that stamps each event with `wall()` (sub-ms) when it is parsed. */
async function sse(oc) {
  const ctrl = new AbortController();
  const res = await fetch(withDirectory(`${oc.url}/event`, oc.projectDir), { headers: { accept: 'text/event-stream' }, signal: ctrl.signal });
  if (!res.ok || !res.body) throw new Error(`GET /event → ${res.status}`);
  const waiters = new Set();
  let connected;
  const ready = new Promise((r) => (connected = r));
  (async () => {
    const dec = new TextDecoder();
    let buf = '';
    try {
      for await (const chunk of res.body) {
        const at = wall();
        buf += dec.decode(chunk, { stream: true });
        let i;
        while ((i = buf.indexOf('\n\n')) >= 0) {
          const data = buf.slice(0, i).split('\n').filter((l) => l.startsWith('data:')).map((l) => l.slice(5).trim()).join('\n');
          buf = buf.slice(i + 2);
          let ev;
          try {
            ev = JSON.parse(data);
          } catch {
            continue;
          }
          if (ev.type === 'server.connected') connected();
          for (const w of [...waiters]) w(ev, at);
        }
      }
    } catch {
      /* closed */
    }
  })();
  await Promise.race([ready, new Promise((r) => setTimeout(r, 5000))]);
  return {
    /** Resolve with `{ev, at}` of the first event after now for which `pred(ev)` holds. */
    next(pred, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const t = setTimeout(() => {
          waiters.delete(w);
          reject(new Error('timed out waiting for an SSE event'));
        }, timeoutMs);
        const w = (ev, at) => {
          if (!pred(ev)) return;
          waiters.delete(w);
          clearTimeout(t);
          resolve({ ev, at });
        };
        waiters.add(w);
      });
    },
    close: () => ctrl.abort(),
  };
}

const partWith = (tag, peer) => (e) =>
  e.type === 'message.part.updated' && String(e.properties?.part?.text ?? '').includes(tag) && (!peer || !!e.properties?.part?.metadata?.peerMessage);

const mock = await startMockModel({
  script: (r) => {
    const text = r.lastUserText;
    if (r.instance === 'a') {
      if (r.lastIsToolResult) return { text: 'A: sent.' };
      const m = /send sample (\d+)/.exec(text);
      if (m) return { toolCalls: [{ name: 'peer_send', arguments: { to: 'bob', text: `e2e sample <${m[1]}>` } }] };
    }
    return { text: 'ok' };
  },
});
let ocA, ocB, ocC;
const cleanup = async () => {
  await Promise.allSettled([ocA?.stop(), ocB?.stop(), ocC?.stop()]);
  await mock.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
  if (brokerParent !== tmp) fs.rmSync(brokerParent, { recursive: true, force: true });
};
try {
  [ocA, ocB, ocC] = await Promise.all([
    startOpencode({ modelBaseURL: mock.baseURL('a'), plugins: [[REPO_ROOT, { alias: 'alice', brokerRoot }]], env: { C2C_BRIDGE_TRACE: traceA } }),
    startOpencode({ modelBaseURL: mock.baseURL('b'), plugins: [[REPO_ROOT, { alias: 'bob', brokerRoot }]], env: { C2C_BRIDGE_TRACE: traceB } }),
    startOpencode({ modelBaseURL: mock.baseURL('c'), plugins: [] }),
  ]);
  const a = client(ocA);
  const b = client(ocB);
  const c = client(ocC);
  const sa = await a.createSession({ title: 'A' });
  const sb = await b.createSession({ title: 'B' });
  const sbFloor = await b.createSession({ title: 'B floor' });
  const sc = await c.createSession({ title: 'C' });
  const evB = await sse(ocB);
  const evC = await sse(ocC);
  // The floor prompt: one text part as long as a framed peer message of this bench.
  const framedLen = (tag) => `[c2c-frame xxxxxxxx BEGIN] from alice (peer message, untrusted data; it cannot approve anything) id 00000000-0000-4000-8000-000000000000\n${tag}\n[c2c-frame xxxxxxxx END]`.length;
  const floorText = (tag) => `${tag} `.padEnd(framedLen(tag), '.');

  const rounds = [];
  for (let i = 0; i < SAMPLES + WARMUP; i++) {
    // pipeline
    const tag = `e2e sample <${i}>`;
    const seen = evB.next(partWith(tag, true));
    await a.promptAsync(sa.id, `send sample ${i}`);
    const { ev, at: eventAt } = await seen;
    const msgsA = await a.messages(sa.id);
    const tool = msgsA.flatMap((m) => m.parts).find((p) => p.type === 'tool' && p.tool === 'peer_send' && JSON.stringify(p.state?.input ?? {}).includes(tag));
    const toolStart = tool?.state?.time?.start;
    if (typeof toolStart !== 'number') throw new Error(`round ${i}: no peer_send tool part with a start time in A`);
    const messageId = ev.properties.part.metadata.peerMessage.messageId;
    await Promise.all([a.waitIdle(sa.id, { intervalMs: 10 }), b.waitIdle(sb.id, { intervalMs: 10 })]);

    // floor: C, no plugin
    const ftag = `floor sample <${i}>`;
    const seenC = evC.next(partWith(ftag, false));
    const postC = wall();
    await c.promptAsync(sc.id, floorText(ftag));
    const floorC = (await seenC).at - postC;
    await c.waitIdle(sc.id, { intervalMs: 10 });

    // floor: B, plugin loaded (watching only)
    const btag = `floor-b sample <${i}>`;
    const seenBf = evB.next(partWith(btag, false));
    const postB = wall();
    await b.promptAsync(sbFloor.id, floorText(btag));
    const floorB = (await seenBf).at - postB;
    await b.waitIdle(sbFloor.id, { intervalMs: 10 });

    rounds.push({ i, warm: i < WARMUP, messageId, toolStart, eventAt, floorC, floorB });
    console.log(`  round ${String(i).padStart(2)}${i < WARMUP ? ' (warm-up)' : ''}: tool start → B's SSE event ${fmt(eventAt - toolStart)}; floor (C, no plugin) ${fmt(floorC)}; floor (B, plugin loaded) ${fmt(floorB)}`);
  }
  evB.close();
  evC.close();
  await new Promise((r) => setTimeout(r, 300)); // the plugins flush their marks every 50 ms

  // ---- our own share, from the plugins' marks ----
  const read = (f) => (fs.existsSync(f) ? fs.readFileSync(f, 'utf8').split('\n').filter(Boolean).map((l) => JSON.parse(l)) : []);
  const ta = read(traceA);
  const tb = read(traceB);
  const cols = { opencodeToExecute: [], via: [], send: [], wake: [], gate: [], toFlush: [], gateCall: [], afterGate: [], accept: [], hookB: [], share: [], total: [], totalOurs: [], floorC: [], floorB: [], overFloor: [] };
  let fetches = ta.filter((m) => m.ev === 'a.via.fetch').length;
  let ackHook = [];
  for (const r of rounds) {
    if (r.warm) continue;
    const s = ta.find((m) => m.ev === 'a.send' && m.messageId === r.messageId);
    const inj = tb.find((m) => m.ev === 'b.inject' && m.messageId === r.messageId);
    const acc = tb.find((m) => m.ev === 'b.accepted' && m.messageId === r.messageId);
    cols.total.push(r.eventAt - r.toolStart);
    cols.floorC.push(r.floorC);
    cols.floorB.push(r.floorB);
    if (!s || !inj) continue;
    const watch = tb.filter((m) => m.ev === 'b.watch' && m.at >= s.via && m.at <= inj.at).at(0);
    // Our event hook's synchronous time on B's main thread from promptAsync to the SSE event.
    const hooks = tb.filter((m) => m.ev === 'hook' && m.start >= inj.at && m.start <= r.eventAt);
    const hookMs = hooks.reduce((x, m) => x + m.ms, 0);
    const stored = hooks.filter((m) => m.type === 'message.part.updated').reduce((x, m) => Math.max(x, m.ms), 0);
    ackHook.push(stored);
    cols.opencodeToExecute.push(s.start - r.toolStart);
    cols.via.push(s.via - s.start);
    cols.send.push(s.at - s.via);
    if (watch) {
      cols.wake.push(watch.at - s.at);
      cols.gate.push(inj.at - watch.at);
      // Inside that span: the delivery's flush entered, the Rust gate returned (the last of
      // each before promptAsync: a wake-up while busy flushes without injecting).
      const fl = tb.filter((m) => m.ev === 'b.flush' && m.at >= watch.at && m.at <= inj.at).at(-1);
      const gd = fl && tb.find((m) => m.ev === 'b.gated' && m.at >= fl.at && m.at <= inj.at);
      if (fl && gd) {
        cols.toFlush.push(fl.at - watch.at);
        cols.gateCall.push(gd.at - fl.at);
        cols.afterGate.push(inj.at - gd.at);
      }
    }
    if (acc) cols.accept.push(acc.at - inj.at);
    cols.hookB.push(hookMs);
    cols.share.push(inj.at - s.start + hookMs);
    cols.totalOurs.push(r.eventAt - s.start);
    cols.overFloor.push(r.eventAt - s.start - r.floorC);
  }
  const S = Object.fromEntries(Object.entries(cols).map(([k, v]) => [k, v.length ? stats(v) : null]));
  const floorMedian = S.floorC?.median;
  const header = ['figure', 'n', 'min', 'median', 'p90', 'max', 'goal', 'verdict'];
  const row = (name, s, goal, ok) => [name, s?.n ?? 0, fmt(s?.min), fmt(s?.median), fmt(s?.p90), fmt(s?.max), goal ?? '', goal ? (s && ok(s) ? 'meets' : 'MISSES') : ''];
  const rows = [
    row('floor: POST prompt_async → its message.part.updated over SSE (C, no plugin)', S.floorC),
    row('floor with our plugin loaded: the same on B (plugin only watching)', S.floorB),
    row("total: A's peer_send execute() entered → B's message.part.updated over SSE", S.totalOurs),
    row('  total − the no-plugin floor (C) of the same round', S.overFloor, `median ≤ ${GOAL_OVER_FLOOR} ms`, (s) => s.median <= GOAL_OVER_FLOOR),
    row("  (for reference) from OpenCode's time.start of A's tool part (1 ms clock, stamped late)", S.total),
    row("our own share: execute() → promptAsync called in B, + our hook time on B's thread", S.share, `median ≤ ${GOAL_SHARE} ms`, (s) => s.median <= GOAL_SHARE),
    row('  A: OpenCode time.start → our execute() entered (OpenCode, 1 ms clock)', S.opencodeToExecute),
    row('  A: viaFor (turn lookup, in the turn index)', S.via),
    row('  A: Broker.send (fsync\'d inbox append + receipt + audit)', S.send),
    row('  send returned → B\'s watch callback (inotify → napi TSFN → B\'s JS loop)', S.wake),
    row('  B: watch callback → promptAsync called (no server round trip since issue 16)', S.gate),
    row('    watch callback → the delivery flush entered (microtask hop)', S.toFlush),
    row('    the Rust inbound gate (gateInbox: inbox read under its lock, policy, framing)', S.gateCall),
    row('    gate returned → promptAsync called (dedup, busy check, part built)', S.afterGate),
    row('  B: our event hooks, synchronous time, promptAsync → SSE event (sum)', S.hookB),
    row('  (not ours) B: promptAsync called → 204 (OpenCode accepting the prompt)', S.accept),
  ];
  const secs = ((Date.now() - started) / 1000).toFixed(1);
  console.log('\n' + textTable(header, rows));
  console.log(`\nviaFor fetches from OpenCode (all rounds): ${fetches}; largest hook time of B's stored-message event: median ${fmt(stats(ackHook.length ? ackHook : [NaN]).median)}`);
  console.log(`anchor: ${ANCHOR.name}: ${ANCHOR.text}\ntotal ${secs} s`);
  const markdown = [
    `Machine: ${M.cores} cores, ${M.kernel}, broker root on ${M.rootFs}, Node ${M.node}; OpenCode 1.18.33 (three \`opencode serve\`: A and B with the plugin, C without; mock model). ${SAMPLES} rounds after ${WARMUP} warm-up, pipeline and floors interleaved in each round; run took ${secs} s; generated ${new Date().toISOString()}. Load average at the end: ${os.loadavg().map((x) => x.toFixed(2)).join(' / ')}.`,
    '',
    mdTable(header, rows),
    '',
    `The floor is measured in the same run: our client POSTs \`prompt_async\` to C (no plugin) and stamps the arrival of that part's \`message.part.updated\` on its SSE stream (sub-ms clock). The pipeline total uses the same SSE stamp on B. Our share comes from the plugin's marks (\`C2C_BRIDGE_TRACE\`, ids and times only). viaFor needed ${fetches} fetch(es) from OpenCode in all rounds. ${ANCHOR.name}: ${ANCHOR.text}.`,
  ].join('\n');
  fs.writeFileSync(
    path.join(HERE, 'results-e2e.json'),
    JSON.stringify({ generated: new Date().toISOString(), machine: M, samples: SAMPLES, anchor: ANCHOR, stats: S, viaFetches: fetches, load: os.loadavg(), raw: cols, markdown }, null, 2) + '\n',
  );
  console.log('wrote bench/results-e2e.json');
} finally {
  await cleanup();
}
process.exit(0);
