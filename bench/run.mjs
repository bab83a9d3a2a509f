// `npm run bench`: c2c-bridge's costs next to floors measured in the same run (issue 7).
//
// A benchmark, not a test: it asserts nothing about time. It prints min / median / p99 of each
// figure, the ratio of its median to a baseline's median, the goal of issue 7 and whether this
// run meets it, and writes bench/results.json and bench/RESULTS.md.
//
// Prerequisite: the release addon (`npx napi build --platform --release`). The Rust
// micro-benchmark of the permission decision is built with
// `cargo build --release --example decision_bench` (incremental; skipped when cargo is absent).
// Options: `npm run bench -- --quick` or BENCH_QUICK=1: a smoke run of a few seconds (few
// iterations, no cargo build, 2,000 send/ack cycles for the memory figure) that writes no
// results file (`.ci/run` runs it so the benchmark cannot rot; times are printed, never
// asserted); BENCH_NO_CARGO=1 (skip the Rust figures).
import { execFileSync, fork, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { fmt, machine, mdTable, measure, ratio, stats, textTable } from './lib.mjs';
import { decisionFigures } from './decision.mjs';
import { ensureBuilt } from '../scripts/ensure-built.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, '..');
// Measure the code as it is: rebuild the release addon first if a source is newer.
await ensureBuilt({ quiet: true });
const require = createRequire(import.meta.url);
const addon = require('../index.js');
const QUICK = !!process.env.BENCH_QUICK || process.argv.includes('--quick');
const it = (n) => (QUICK ? Math.max(5, Math.ceil(n / 20)) : n);
const started = Date.now();

// The broker roots live under the user's state directory's file system (as the default root
// does: ~/.c2c/… or $XDG_STATE_HOME/…), not a tmpfs /tmp where fsync is free.
const BENCH_PARENT = process.env.BENCH_DIR ?? path.join(os.homedir(), '.cache');
fs.mkdirSync(BENCH_PARENT, { recursive: true }); // a fresh CI home may have no ~/.cache yet
const BASE = fs.mkdtempSync(path.join(BENCH_PARENT, 'c2c-bench-'));
fs.chmodSync(BASE, 0o700);
const cleanup = () => fs.rmSync(BASE, { recursive: true, force: true });
process.on('exit', cleanup);

const M = machine(BASE);
const results = []; // {id, group, name, stats, baseline?, goal?, meets?, note?}
const skipped = []; // {name, why}
const baselines = {};

function record(r) {
  results.push(r);
  const s = r.stats;
  console.log(`  ${r.name.padEnd(58)} median ${fmt(s.median).padStart(9)}  p99 ${fmt(s.p99).padStart(9)}  (n=${s.n})`);
  return r;
}
function skip(name, why) {
  skipped.push({ name, why });
  console.log(`  ${name.padEnd(58)} skipped: ${why}`);
}

let sidCounter = 0;
function newRoot(tag) {
  const r = path.join(BASE, `${tag}-${sidCounter++}`);
  fs.mkdirSync(r, { mode: 0o700 });
  return addon.checkRoot(r);
}
function open(root, name, extra = {}) {
  return addon.Broker.open({
    sessionId: `ses_${name}`,
    alias: name,
    root,
    directory: REPO,
    // caps of the pending branch (ignored by builds without it): the bench opens many slots
    pendingPerAliasCap: 1_000_000,
    pendingGlobalCap: 1_000_000,
    // the bench sends hundreds of messages to one peer: lift the per-pair rate limit
    rateBurst: 1_000_000,
    ...extra,
  });
}

/** Fill registry.json with `n` alive registrations (our pid and start time; c2c's shape). */
function fillRegistry(root, n) {
  const stat = fs.readFileSync('/proc/self/stat', 'utf8');
  const startTime = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
  const now = Date.now() / 1000;
  const regs = [];
  for (let i = 0; i < n; i++) {
    regs.push({
      session_id: `ses_filler_${i}`,
      alias: `filler-${i}`,
      pid: process.pid,
      pid_start_time: startTime,
      registered_at: now,
      client_type: 'opencode',
      plugin_version: '0.1.0',
      directory: REPO,
    });
  }
  fs.writeFileSync(path.join(root, 'registry.json'), JSON.stringify(regs), { mode: 0o600 });
}

/** Fill pending_permissions.json with `n` unexpired slots of filler requesters (c2c's shape). */
function fillPending(root, n) {
  const now = Date.now() / 1000;
  const slots = [];
  for (let i = 0; i < n; i++) {
    slots.push({
      perm_id: `per_filler_${i}`,
      kind: 'permission',
      requester_session_id: `ses_filler_${i % 1000}`,
      requester_alias: `filler-${i % 1000}`,
      supervisors: ['bench-b'],
      created_at: now,
      expires_at: now + 3600,
      fallthrough_fired_at: [],
      resolved_at: null,
      verdict: null,
    });
  }
  fs.writeFileSync(path.join(root, 'pending_permissions.json'), JSON.stringify(slots), { mode: 0o600 });
}

const FLOOR_BODY = Buffer.from(JSON.stringify([{ message_id: '00000000-0000-4000-8000-000000000000', content: 'x'.repeat(120) }]));
/** The durability floor: one fsync'd atomic replace of a small file in `root`. */
function fsyncReplace(root) {
  const target = path.join(root, 'floor.json');
  const tmp = `${target}.tmp.${process.pid}`;
  const fd = fs.openSync(tmp, fs.constants.O_WRONLY | fs.constants.O_CREAT | fs.constants.O_EXCL | fs.constants.O_NOFOLLOW, 0o600);
  fs.writeSync(fd, FLOOR_BODY);
  fs.fsyncSync(fd);
  fs.closeSync(fd);
  fs.renameSync(tmp, target);
  const d = fs.openSync(root, 'r');
  fs.fsyncSync(d);
  fs.closeSync(d);
}

const hasPending = typeof addon.Broker.prototype.openPendingReply === 'function' &&
  typeof addon.Broker.prototype.checkPendingReply === 'function';

// ---------------------------------------------------------------------------------------------
console.log(`c2c-bridge bench — ${M.cores} cores (${M.cpu}), ${M.kernel}, root fs ${M.rootFs}, Node ${M.node}, load ${M.loadavg.join(' ')}`);
console.log(`native ${addon.nativeVersion()}; root ${BASE}${QUICK ? ' (BENCH_QUICK)' : ''}\n`);

// ---- baselines ------------------------------------------------------------------------------
console.log('baselines');
{
  const root = newRoot('floor');
  const fsyncReplaceHere = () => fsyncReplace(root);
  baselines.fsync = record({ id: 'floor.fsync', group: 'baseline', name: 'fsync\'d atomic replace (small file, tmp+fsync+rename+dir fsync)', stats: measure(fsyncReplaceHere, { iterations: it(300), warmup: 20 }) });
  baselines.noop = record({ id: 'floor.noop', group: 'baseline', name: 'no-op napi call (noop())', stats: measure(() => addon.noop(), { iterations: it(2000), batch: 200, warmup: 50 }), note: 'batch means of 200 calls' });
  baselines.spawnTrue = record({ id: 'floor.spawn', group: 'baseline', name: 'spawn /bin/true (spawnSync)', stats: measure(() => spawnSync('/bin/true'), { iterations: it(60), warmup: 5 }) });
  baselines.nodeE = record({ id: 'floor.node', group: 'baseline', name: "spawn node -e ''", stats: measure(() => spawnSync(process.execPath, ['-e', '']), { iterations: QUICK ? 2 : 15, warmup: QUICK ? 0 : 2 }) });
}

// ---- cold start -------------------------------------------------------------------------------
console.log('\nplugin cold start (fresh process each)');
{
  const root = newRoot('cold');
  const runs = [];
  for (let i = 0; i < (QUICK ? 2 : 15); i++) {
    const out = execFileSync(process.execPath, [path.join(HERE, 'child-coldstart.cjs'), root, `ses_cold${i}`], { encoding: 'utf8' });
    runs.push(JSON.parse(out));
  }
  record({ id: 'cold.total', group: 'cold start', name: 'addon load + Broker.open (require → registered)', stats: stats(runs.map((r) => r.total)), baseline: 'fsync', goal: { text: '≤ 20 ms median', ok: (s) => s.median <= 20 } });
  record({ id: 'cold.require', group: 'cold start', name: '  of which require(index.js) (addon load)', stats: stats(runs.map((r) => r.require)) });
  record({ id: 'cold.open', group: 'cold start', name: '  of which Broker.open (register + inbox + log)', stats: stats(runs.map((r) => r.open)), baseline: 'fsync' });
  record({ id: 'cold.boot', group: 'cold start', name: '  (context) node boot before require', stats: stats(runs.map((r) => r.boot)), note: 'not part of the plugin cost: OpenCode is already running' });
}

// ---- operations at 10 / 100 / 1,000 registrations and pending slots -------------------------
const SIZES = [10, 100, 1000];
const perSize = {}; // id → {size → stats}
function sized(id, size, s) {
  (perSize[id] ??= {})[size] = s;
}
const OPS = [];
for (const size of SIZES) {
  console.log(`\noperations with ${size} registrations${hasPending ? ` and ${size} pending slots` : ''}`);
  const root = newRoot(`ops${size}`);
  fillRegistry(root, size - 2);
  if (hasPending) fillPending(root, size);
  const a = open(root, 'bench-a');
  const b = open(root, 'bench-b');
  const tag = ` [${size} regs]`;
  const S = (id, name, s, extra = {}) => {
    sized(id, size, s);
    OPS.push(id);
    return record({ id: `${id}@${size}`, group: `ops@${size}`, name: name + tag, stats: s, size, ...extra });
  };

  // send, then peek + ack on the receiver (the inbox stays at 0–1 messages).
  // The fsync floor is measured in the same loop (paired), because fsync latency on a shared
  // virtual disk drifts by an order of magnitude within seconds.
  const floorRoot = root;
  const floorT = [];
  const sendT = [];
  const peekAckT = [];
  const n = it(size === 1000 ? 150 : 200);
  for (let i = 0; i < n + 10; i++) {
    const tf = performance.now();
    fsyncReplace(floorRoot);
    const t0 = performance.now();
    a.send('bench-b', `bench message ${i}: ${'x'.repeat(200)}`);
    const t1 = performance.now();
    const msgs = b.peek();
    b.ack(msgs.map((m) => m.messageId));
    const t2 = performance.now();
    if (i >= 10) {
      floorT.push(t0 - tf);
      sendT.push(t1 - t0);
      peekAckT.push(t2 - t1);
    }
  }
  const paired = stats(floorT);
  S('floorPaired', 'fsync floor, paired with send', paired);
  S('send', 'send (1 recipient, 200 B)', stats(sendT), { baseline: 'fsync', baselineStats: paired, goal: { text: '≤ 1.3× fsync floor (median, paired)', ok: (s) => s.median <= 1.3 * paired.median } });
  S('peekack', 'peek + ack (1 message)', stats(peekAckT), { baseline: 'fsync', baselineStats: paired });
  S('peek', 'peek (empty inbox)', measure(() => b.peek(), { iterations: it(2000), warmup: 50 }), { baseline: 'noop' });
  S('listPeers', 'listPeers', measure(() => a.listPeers(), { iterations: it(size === 1000 ? 60 : 300), warmup: 5 }), { baseline: 'noop', note: 'reads /proc/<pid>/stat per registration (liveness)' });

  // Broker.open of a new session at this size (then close, so the size stays).
  let k = 0;
  S('open', 'Broker.open (register) + close', measure(() => {
    const h = open(root, `bench-open-${size}-${k++}`);
    h.close();
  }, { iterations: it(size === 1000 ? 40 : 80), warmup: 3 }), { baseline: 'fsync', note: 'open and close each rewrite registry.json' });

  if (hasPending) {
    // Paired with the fsync floor in the same loop, as send is (fsync latency drifts within
    // seconds). Each open adds a slot: the file holds `size` to `size + n` slots meanwhile.
    // No slot expires during the run, so every open takes the splice path (the new record
    // spliced into the cached bytes); `node bench/pending.mjs` measures the same figures alone.
    let p = 0;
    const ids = [];
    const openT = [];
    const openFloorT = [];
    const nOpen = it(100);
    for (let i = 0; i < nOpen + 5; i++) {
      const tf = performance.now();
      fsyncReplace(root);
      const t0 = performance.now();
      const id = `per_bench_${size}_${p++}`;
      a.openPendingReply(id, 'permission', ['bench-b']);
      const t1 = performance.now();
      ids.push(id);
      if (i >= 5) {
        openFloorT.push(t0 - tf);
        openT.push(t1 - t0);
      }
    }
    const openFloor = stats(openFloorT);
    S('openPendingFloor', 'fsync floor, paired with openPendingReply', openFloor);
    const openGoal = size >= 1000 ? 2 : 1.3;
    S('openPending', 'openPendingReply', stats(openT), { baseline: 'fsync', baselineStats: openFloor, goal: { text: `≤ ${openGoal}× fsync floor (median, paired)`, ok: (s) => s.median <= openGoal * openFloor.median } });
    // The first valid check of each slot stamps `resolved_at` (a locked rewrite of the
    // file, without a disk flush); later checks of it read the cached snapshot only.
    let f = 0;
    S('checkFirst', 'checkPendingReply (first valid check: stamps resolved_at)', measure(() => b.checkPendingReply(ids[f++]), { iterations: Math.min(ids.length, it(100)), warmup: 0 }), { baseline: 'noop', note: 'replaces pending_permissions.json without fsync (only the stamped record re-serialised when nothing is to be pruned)' });
    let q = 0;
    S('checkValid', 'checkPendingReply (valid, already stamped)', measure(() => b.checkPendingReply(ids[q++ % ids.length]), { iterations: it(300), warmup: 10 }), { baseline: 'noop', goal: { text: '≤ 10 µs median', ok: (s) => s.median <= 0.01 } });
    S('checkUnknown', 'checkPendingReply (unknown id)', measure(() => b.checkPendingReply('per_unknown_0000'), { iterations: it(300), warmup: 10 }), { baseline: 'noop', goal: { text: '≤ 10 µs median', ok: (s) => s.median <= 0.01 } });
  } else if (size === SIZES[0]) {
    skip('openPendingReply / checkPendingReply', 'not available in this build (no Broker.openPendingReply)');
  }
  a.close();
  b.close();
}

// ---- envelope ----------------------------------------------------------------------------------
console.log('\nenvelope');
{
  // exactly 16 KiB: 256 lines of 63 ASCII characters (quotes, brackets, a forged frame marker) + \n
  const line = (i) => `line ${String(i).padStart(3, '0')}: "quoted" [c2c-frame 0 END] text of a peer message body`.padEnd(63, '.').slice(0, 63) + '\n';
  const body = Array.from({ length: 256 }, (_, i) => line(i)).join('');
  const input = { fromAlias: 'bob', body, messageId: '6f1c2a9e-3b7d-4c1e-9a2b-0d4e5f6a7b8c', via: ['ses_bob'] };
  record({ id: 'frame16k', group: 'envelope', name: `frameMessage (16 KiB body, ${Buffer.byteLength(body)} B)`, stats: measure(() => addon.frameMessage(input), { iterations: it(2000), warmup: 50 }), baseline: 'noop' });
}

// ---- cross-process delivery -----------------------------------------------------------------
console.log('\ncross-process delivery (second Node process sends; Broker.watch callback here)');
{
  const root = newRoot('deliver');
  const b = open(root, 'bench-recv');
  const child = fork(path.join(HERE, 'child-sender.cjs'), [root], { stdio: ['ignore', 'inherit', 'inherit', 'ipc'] });
  // process.hrtime (CLOCK_MONOTONIC in Node) is one clock for both processes;
  // performance.timeOrigin is not (Node's is off by 1–10 ms, per process).
  const wall = () => Number(process.hrtime.bigint()) / 1e6;
  let waiting = null; // {resolve}
  let cbAt = null;
  b.watch(() => {
    if (waiting && cbAt === null) cbAt = wall();
  });
  const fromChild = () => new Promise((resolve) => child.once('message', resolve));
  await fromChild(); // ready
  const fromBefore = [];
  const fromAfter = [];
  const samples = it(200);
  for (let i = 0; i < samples + 10; i++) {
    cbAt = null;
    waiting = true;
    const reply = fromChild();
    child.send({ i, to: 'bench-recv' });
    const r = await reply;
    // the callback may arrive after the child's reply: wait for it (no polling of the file)
    for (let spin = 0; cbAt === null && spin < 500; spin++) await new Promise((res) => setImmediate(res));
    if (cbAt === null) await new Promise((res) => setTimeout(res, 50));
    waiting = null;
    if (cbAt !== null && i >= 10) {
      fromBefore.push(cbAt - r.before);
      fromAfter.push(cbAt - r.after);
    }
    b.ack(b.peek().map((m) => m.messageId));
    await new Promise((res) => setTimeout(res, 3)); // let the ack's own inotify events pass
  }
  child.send({ stop: true });
  b.unwatch();
  b.close();
  record({ id: 'deliver.commit', group: 'delivery', name: 'commit → watch callback (commit = send() returned)', stats: stats(fromAfter), goal: { text: 'p50 ≤ 1 ms, p99 ≤ 5 ms', ok: (s) => s.median <= 1 && s.p99 <= 5 }, note: 'negative: the rename is seen before send() returns (dir fsync still running)' });
  record({ id: 'deliver.call', group: 'delivery', name: 'send() called → watch callback', stats: stats(fromBefore), goal: { text: 'p50 ≤ 1 ms, p99 ≤ 5 ms', ok: (s) => s.median <= 1 && s.p99 <= 5 } });
}

// ---- permission decision -------------------------------------------------------------------
console.log('\npermission decision (10,000-message index)');
if (typeof addon.PermissionGate === 'function') {
  // The real napi path the plugin takes (bench/decision.mjs): a per-instance gate fed 10,000
  // messages through observe(), then one permission.asked per iteration (a fresh id: each id is
  // decided once) for a bash call and for an edit of a peer-triggered turn, with the raw tool
  // arguments given; each final decision appends its audit line to broker.log, as in
  // production. Each sample is paired with a no-op napi call in the same loop.
  const gateBase = path.join(BASE, 'gate');
  fs.mkdirSync(gateBase, { mode: 0o700 });
  for (const f of decisionFigures(addon, gateBase, { iterations: it(20_000), warmup: QUICK ? 20 : 500 })) record(f);
} else {
  skip('PermissionGate decision (napi)', 'not available in this build (no addon.PermissionGate)');
}
if (process.env.BENCH_NO_CARGO || QUICK) {
  skip('decision (Rust, provenance + guardrail)', QUICK ? '--quick (no cargo build)' : 'BENCH_NO_CARGO set');
} else {
  const build = spawnSync('cargo', ['build', '--release', '--quiet', '--example', 'decision_bench'], { cwd: REPO, encoding: 'utf8' });
  const bin = path.join(REPO, 'target', 'release', 'examples', 'decision_bench');
  if (build.status !== 0 || !fs.existsSync(bin)) {
    skip('decision (Rust, provenance + guardrail)', `cargo build --release --example decision_bench failed: ${(build.stderr || build.error || '').toString().slice(-300)}`);
  } else {
    const out = execFileSync(bin, [String(QUICK ? 4000 : 20000)], { cwd: REPO, encoding: 'utf8' });
    for (const line of out.trim().split('\n')) {
      const j = JSON.parse(line);
      const s = { n: j.iterations, min: j.min_ns / 1e6, median: j.median_ns / 1e6, p99: j.p99_ns / 1e6, p999: j.p999_ns / 1e6, max: j.max_ns / 1e6 };
      // issue 16: p99 ≤ 5 µs for an edit, ≤ 15 µs for a bash pipeline (provenance walk + guardrail)
      const goal = j.name.startsWith('decision')
        ? j.name.includes('(edit)')
          ? { text: '≤ 5 µs p99 (edit)', ok: (x) => x.p99 <= 0.005 }
          : { text: '≤ 15 µs p99 (bash pipeline)', ok: (x) => x.p99 <= 0.015 }
        : null;
      record({ id: `rust.${j.name}`, group: 'decision (Rust)', name: `${j.name} [Rust, no FFI]`, stats: s, baseline: 'noop', ...(goal ? { goal } : {}), note: `p99.9 ${fmt(s.p999)}, max ${fmt(s.max)}` });
    }
  }
}

// ---- memory: the addon over many send/ack cycles ------------------------------------------------
const memory = {};
{
  const cycles = QUICK ? 2000 : 100_000;
  // Memory, not time: the root goes on tmpfs when there is one (fsync-free, so 100,000 cycles
  // take a minute, not many).
  const shm = fs.existsSync('/dev/shm') ? fs.mkdtempSync('/dev/shm/c2c-bench-heap-') : null;
  const dir = shm ?? path.join(BASE, 'heap');
  if (!shm) fs.mkdirSync(dir);
  fs.chmodSync(dir, 0o700);
  console.log(`\nmemory: ${cycles} send → peek → acknowledge cycles in a fresh process (--expose-gc, root on ${shm ? 'tmpfs' : M.rootFs})`);
  try {
    const out = execFileSync(process.execPath, ['--expose-gc', path.join(HERE, 'child-heap.cjs'), addon.checkRoot(dir), String(cycles)], { encoding: 'utf8' });
    const r = JSON.parse(out);
    // After the first tenth (allocator and caches warmed up) to the end.
    const from = r.samples[1] ?? r.samples[0];
    const to = r.samples.at(-1);
    const mb = (x) => +(x / 2 ** 20).toFixed(2);
    memory.heap = {
      cycles,
      seconds: +r.seconds.toFixed(1),
      fromCycle: from.cycle,
      rssMiB: [mb(from.rss), mb(to.rss)],
      nativeGrowthMiB: mb(to.native - from.native),
      rssGrowthMiB: mb(to.rss - from.rss),
      jsHeapGrowthMiB: mb(to.heapUsed - from.heapUsed),
      samples: r.samples,
    };
    console.log(`  rss ${memory.heap.rssMiB[0]} → ${memory.heap.rssMiB[1]} MiB from cycle ${from.cycle} to ${cycles}; native (rss − V8 heap) growth ${memory.heap.nativeGrowthMiB} MiB; JS heap growth ${memory.heap.jsHeapGrowthMiB} MiB (${memory.heap.seconds} s)`);
  } catch (err) {
    skip('memory over send/ack cycles', String(err).slice(0, 300));
  } finally {
    if (shm) fs.rmSync(shm, { recursive: true, force: true });
  }
}

// ---- report ----------------------------------------------------------------------------------
for (const r of results) {
  if (r.goal) r.meets = r.goal.ok(r.stats);
}
const header = ['figure', 'n', 'min', 'median', 'p99', 'vs baseline (median)', 'goal', 'verdict'];
const baseName = { fsync: 'fsync floor', noop: 'no-op napi', spawnTrue: '/bin/true', nodeE: "node -e ''" };
const rowOf = (r) => [
  r.name,
  r.stats.n,
  fmt(r.stats.min),
  fmt(r.stats.median),
  fmt(r.stats.p99),
  r.baseline ? `${ratio(r.stats.median, (r.baselineStats ?? baselines[r.baseline].stats).median)} ${baseName[r.baseline]}${r.baselineStats ? ' (paired)' : ''}` : '',
  r.goal?.text ?? '',
  r.goal ? (r.meets ? 'meets' : 'MISSES') : '',
];
// Every non-baseline figure is also compared with the CLI-per-call floors.
const rows = results.map(rowOf);
console.log('\n' + textTable(header, rows));

const scaleHeader = ['operation (median)', ...SIZES.map((s) => `${s} regs`), `${SIZES.at(-1)} / ${SIZES[0]}`];
const scaleRows = [...new Set(OPS)].map((id) => {
  const bySize = perSize[id];
  const name = results.find((r) => r.id === `${id}@${SIZES[0]}`)?.name.replace(/ \[.*\]$/, '') ?? id;
  return [name, ...SIZES.map((s) => fmt(bySize[s]?.median)), ratio(bySize[SIZES.at(-1)]?.median, bySize[SIZES[0]]?.median)];
});
console.log('\nscaling\n' + textTable(scaleHeader, scaleRows));

const cliRows = results
  .filter((r) => ['send@10', 'peekack@10', 'openPending@10', 'checkValid@10', 'listPeers@10'].includes(r.id))
  .map((r) => [r.name, fmt(r.stats.median), ratio(baselines.spawnTrue.stats.median, r.stats.median), ratio(baselines.nodeE.stats.median, r.stats.median)]);
console.log('\nhow many times cheaper than a process per call\n' + textTable(['figure', 'median', '/bin/true ÷ figure', "node -e '' ÷ figure"], cliRows));
if (skipped.length) console.log('\nskipped\n' + skipped.map((s) => `  ${s.name}: ${s.why}`).join('\n'));
const secs = ((Date.now() - started) / 1000).toFixed(1);
console.log(`\ntotal ${secs} s`);

if (QUICK) {
  // A smoke run: its few iterations are not results. Nothing is written.
  console.log('--quick: nothing written (bench/results.json and bench/RESULTS.md are left as they are)');
  process.exit(0);
}
const json = {
  generated: new Date().toISOString(),
  machine: M,
  nativeVersion: addon.nativeVersion(),
  quick: QUICK,
  seconds: +secs,
  baselines: Object.fromEntries(Object.entries(baselines).map(([k, v]) => [k, v.stats])),
  figures: results.map(({ goal, baselineStats, ...r }) => ({ ...r, goal: goal?.text ?? null, ...(baselineStats ? { pairedBaseline: baselineStats } : {}) })),
  scaling: perSize,
  memory,
  skipped,
};
fs.writeFileSync(path.join(HERE, 'results.json'), JSON.stringify(json, null, 2) + '\n');

// The relay across two broker roots through a real nats-server (issue 17): its own script,
// which writes bench/results-relay.json (or says why it skipped).
spawnSync(process.execPath, [path.join(HERE, 'relay.mjs')], { stdio: 'inherit', env: process.env });
const relayPath = path.join(HERE, 'results-relay.json');
const relay = fs.existsSync(relayPath) ? JSON.parse(fs.readFileSync(relayPath, 'utf8')) : null;

const notesPath = path.join(HERE, 'NOTES.md');
const notes = fs.existsSync(notesPath) ? fs.readFileSync(notesPath, 'utf8') : '';
const e2ePath = path.join(HERE, 'results-e2e.json');
const e2e = fs.existsSync(e2ePath) ? JSON.parse(fs.readFileSync(e2ePath, 'utf8')) : null;
const e2eAltPath = path.join(HERE, 'results-e2e-alt.json');
const e2eAlt = fs.existsSync(e2eAltPath) ? JSON.parse(fs.readFileSync(e2eAltPath, 'utf8')) : null;
const memPath = path.join(HERE, 'results-memory.json');
const mem = fs.existsSync(memPath) ? JSON.parse(fs.readFileSync(memPath, 'utf8')) : null;
const heapLine = memory.heap
  ? `The addon over ${memory.heap.cycles.toLocaleString('en')} send → peek → acknowledge cycles (one fresh Node process, \`--expose-gc\`, a full GC before each sample, root on tmpfs): RSS ${memory.heap.rssMiB[0]} → ${memory.heap.rssMiB[1]} MiB from cycle ${memory.heap.fromCycle.toLocaleString('en')} to the end; native memory (RSS − V8 heap) grew ${memory.heap.nativeGrowthMiB} MiB, the JS heap ${memory.heap.jsHeapGrowthMiB} MiB (goal: flat).`
  : 'The addon over send/ack cycles: not measured in this run.';
const md = [
  '# c2c-bridge benchmark results',
  '',
  `Generated by \`npm run bench\` (bench/run.mjs) on ${json.generated}${QUICK ? ' with BENCH_QUICK' : ''}; do not edit by hand.`,
  `Machine: ${M.cores} cores (${M.cpu}), ${M.kernel}, broker root on **${M.rootFs}**, Node ${M.node}, ${M.memGiB} GiB; load average at start ${M.loadavg.join(' / ')} (the machine is shared with other sessions: absolute times are noisy, ratios to paired baselines less so). Run took ${secs} s.`,
  '',
  'min / median / p99 per figure; the ratio is the figure\'s median over the named baseline\'s median, measured in the same run. The no-op napi figure is a mean over batches of 200 calls (one clock read costs more than the call); `send` and `peek + ack` are compared with the fsync floor measured in the same loop (paired).',
  '',
  mdTable(header, rows),
  '',
  '## Scaling (median per operation with 10, 100, 1,000 registrations' + (hasPending ? ' and pending slots' : '') + ')',
  '',
  mdTable(scaleHeader, scaleRows),
  '',
  '## Against a process per call (c2c\'s OpenCode plugin spawns the `c2c` CLI per call)',
  '',
  mdTable(['figure', 'median', '/bin/true ÷ figure', "node -e '' ÷ figure"], cliRows),
  '',
  ...(skipped.length ? ['## Skipped', '', ...skipped.map((s) => `- ${s.name}: ${s.why}`), ''] : []),
  '## The relay between two nodes (bench/relay.mjs)',
  '',
  relay ? relay.markdown : 'Not run: bench/relay.mjs wrote no results.',
  '',
  '## Memory',
  '',
  heapLine,
  '',
  mem ? mem.markdown : 'RSS added to `opencode serve` by the plugin: not run yet (`npm run bench:memory` writes bench/results-memory.json, included here by the next `npm run bench`).',
  '',
  '## End to end in OpenCode (`npm run bench:e2e`)',
  '',
  e2e ? e2e.markdown : 'Not run yet: `npm run bench:e2e` writes bench/results-e2e.json, included here by the next `npm run bench`.',
  '',
  ...(e2eAlt
    ? [
        `### The same with the broker root on ${e2eAlt.machine?.rootFs ?? 'another file system'} (\`BENCH_E2E_BROKER_PARENT\`)`,
        '',
        e2eAlt.markdown,
        '',
      ]
    : []),
  notes,
].join('\n');
fs.writeFileSync(path.join(HERE, 'RESULTS.md'), md);
console.log('wrote bench/results.json and bench/RESULTS.md');
process.exit(0);
