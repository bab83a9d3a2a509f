// `npm run bench:memory`: the resident memory the plugin adds to an `opencode serve` process
// with 1, 100 and 1,000 root sessions registered (OpenCode 1.18.33, the e2e harness).
//
// Two servers side by side, the same mock model and config but the plugins: P loads
// c2c-bridge (its own broker root) and the memory probe (bench/memory-probe-plugin.mjs), N only
// the probe. The probe starts Bun's HTTP client in both (one request to its own server), as in
// any OpenCode that has called a model, and runs a full garbage collection of Bun's JS heap on
// request. At each level both get the same number of sessions (`POST /session`); we wait until
// P's broker registry lists them all, let them settle 2 s, read RSS P − N once as Bun left it
// ("uncollected"), then take BENCH_MEMORY_SAMPLES rounds: a full GC in both, then
// /proc/<pid>/smaps of both ("settled"). Figures are medians (and min–max) of the paired
// differences; the settled one is what the goal is read on, split into the addon's mapped
// code, other mapped files (OpenCode's own code pages touched for us), glibc's main heap, and
// other anonymous memory (Bun's heaps, thread arenas and stacks), and the growth since 0
// sessions (two servers differ by ±2 MiB whatever the plugin does). Earlier rounds compared with
// a server without any plugin and without collecting: see bench/NOTES.md "Memory" for what
// that figure held. A benchmark: it asserts nothing. Writes bench/results-memory.json (folded
// into bench/RESULTS.md by `npm run bench`).
// Options: BENCH_MEMORY_LEVELS (default "1,100,1000"), BENCH_MEMORY_SAMPLES (default 5),
// BENCH_MEMORY_CONTROL=1 (P without c2c-bridge too: the difference two plugin-less servers show,
// i.e. the noise floor; writes bench/results-memory-control.json instead).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { client, startMockModel, startOpencode, REPO_ROOT } from '../__tests__/e2e/harness/index.mjs';
import { machine, mdTable, textTable } from './lib.mjs';
import { memParts } from './memory-smaps.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const LEVELS = (process.env.BENCH_MEMORY_LEVELS ?? '1,100,1000').split(',').map(Number);
const SAMPLES = Math.max(1, Number(process.env.BENCH_MEMORY_SAMPLES ?? 5));
const CONTROL = process.env.BENCH_MEMORY_CONTROL === '1';
const GOAL_MIB_AT_100 = 10;
const PROBE = path.join(HERE, 'memory-probe-plugin.mjs');
const started = Date.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'c2c-bench-mem-'));
const brokerRoot = path.join(tmp, 'broker');
fs.mkdirSync(brokerRoot, { mode: 0o700 });
const probeP = path.join(tmp, 'probe-p');
const probeN = path.join(tmp, 'probe-n');
fs.mkdirSync(probeP);
fs.mkdirSync(probeN);
const M = machine(brokerRoot);
console.log(`c2c-bridge memory bench — ${M.cores} cores, ${M.kernel}, Node ${M.node}, load ${M.loadavg.join(' ')}`);

/** VmRSS in MiB. */
const rssMiB = (pid) => {
  const m = /VmRSS:\s+(\d+) kB/.exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
};
const sorted = (xs) => [...xs].sort((a, b) => a - b);
const median = (xs) => sorted(xs)[Math.floor(xs.length / 2)];
const spread = (xs) => ({ median: median(xs), min: Math.min(...xs), max: Math.max(...xs) });
const f1 = (x) => x.toFixed(1);
const registered = () => {
  try {
    return JSON.parse(fs.readFileSync(path.join(brokerRoot, 'registry.json'), 'utf8')).length;
  } catch {
    return 0;
  }
};

/** Ask a server's probe for a full GC; resolves with its heap statistics (bun:jsc heapStats). */
async function collect(dir) {
  const id = `${process.pid}-${Math.random()}`;
  fs.rmSync(path.join(dir, 'reply.json'), { force: true });
  fs.writeFileSync(path.join(dir, 'request'), id);
  const deadline = Date.now() + 30_000;
  while (Date.now() < deadline) {
    await sleep(50);
    try {
      const reply = JSON.parse(fs.readFileSync(path.join(dir, 'reply.json'), 'utf8'));
      if (reply.id === id) return reply;
    } catch {
      // not yet
    }
  }
  throw new Error(`the memory probe in ${dir} did not answer`);
}

const mock = await startMockModel({ script: () => ({ text: 'ok' }) });
let P, N;
try {
  [P, N] = await Promise.all([
    startOpencode({ modelBaseURL: mock.baseURL('p'), plugins: [[PROBE, { dir: probeP }], ...(CONTROL ? [] : [[REPO_ROOT, { brokerRoot }]])] }),
    startOpencode({ modelBaseURL: mock.baseURL('n'), plugins: [[PROBE, { dir: probeN }]] }),
  ]);
  const servers = [P, N].map(client);

  /** Settle; one uncollected P − N figure, then `SAMPLES` settled ones (each after a full GC in both). */
  const sample = async () => {
    await sleep(2000);
    const uncollected = rssMiB(P.pid) - rssMiB(N.pid);
    const settled = [];
    const parts = [];
    const jsHeap = [];
    const threads = [];
    for (let i = 0; i < SAMPLES; i++) {
      const [hp, hn] = await Promise.all([collect(probeP), collect(probeN)]);
      await sleep(300);
      const p = memParts(P.pid);
      const n = memParts(N.pid);
      settled.push(p.total - n.total);
      parts.push({
        addon: p.addon - n.addon,
        files: p.files - n.files,
        heap: p.heap - n.heap,
        anon: p.anon + p.stacks - n.anon - n.stacks,
      });
      jsHeap.push((hp.heapSize - hn.heapSize) / 2 ** 20);
      threads.push(p.threads - n.threads);
      await sleep(500);
    }
    const part = (k) => median(parts.map((x) => x[k]));
    return {
      withPlugin: rssMiB(P.pid),
      uncollected,
      settled: spread(settled),
      parts: { addon: part('addon'), files: part('files'), heap: part('heap'), anon: part('anon') },
      jsHeap: median(jsHeap),
      threads: median(threads),
    };
  };
  const rows = [];
  const levels = [];
  const row = (label, s, goal = '') => [
    label,
    `${f1(s.settled.median)} (${f1(s.settled.min)}–${f1(s.settled.max)})`,
    levels.length > 1 ? f1(s.settled.median - levels[0].settled.median) : '',
    `${f1(s.parts.addon)} / ${f1(s.parts.files)} / ${f1(s.parts.heap)} / ${f1(s.parts.anon)}`,
    f1(s.jsHeap),
    String(s.threads),
    f1(s.uncollected),
    goal,
  ];
  const show = (label, s) =>
    console.log(
      `  ${label}: settled +${f1(s.settled.median)} MiB (${f1(s.settled.min)}–${f1(s.settled.max)}; addon code ${f1(s.parts.addon)}, other files ${f1(s.parts.files)}, [heap] ${f1(s.parts.heap)}, anonymous ${f1(s.parts.anon)}; JS heap ${f1(s.jsHeap)}; threads +${s.threads}); uncollected ${f1(s.uncollected)} MiB`,
    );
  const base = await sample();
  levels.push({ sessions: 0, ...base });
  rows.push(row('0 (plugin loaded, nothing registered)', base));
  show('0 sessions', base);
  let made = 0;
  for (const level of LEVELS) {
    const t0 = Date.now();
    while (made < level) {
      const batch = Math.min(10, level - made);
      await Promise.all(
        Array.from({ length: batch }, (_, k) => Promise.all(servers.map((c, j) => c.createSession({ title: `${'pn'[j]}${made + k}` })))),
      );
      made += batch;
    }
    const deadline = Date.now() + 180_000;
    while (!CONTROL && registered() < level && Date.now() < deadline) await sleep(100);
    const regs = CONTROL ? 0 : registered();
    const secondsToRegister = (Date.now() - t0) / 1000;
    const s = await sample();
    levels.push({ sessions: level, registered: regs, secondsToRegister, ...s });
    const goal = level === 100 ? `≤ ${GOAL_MIB_AT_100} MiB: ${s.settled.median <= GOAL_MIB_AT_100 ? 'meets' : 'MISSES'}` : '';
    rows.push(row(`${level} (${regs} registered)`, s, goal));
    show(`${level} sessions (${regs} registered)`, s);
  }
  const header = [
    'root sessions',
    'added by the plugin, settled (MiB: median (min–max) of paired samples after a full GC in both)',
    'growth since 0 sessions (MiB, settled medians; steadier than the fixed part)',
    'of which addon code / other files / [heap] / anonymous (MiB, medians)',
    'JS heap (MiB)',
    'threads',
    'uncollected (MiB: one sample as Bun left it, before the GCs)',
    'goal',
  ];
  const secs = ((Date.now() - started) / 1000).toFixed(1);
  console.log('\n' + textTable(header, rows) + `\ntotal ${secs} s`);
  const markdown = [
    `RSS added to an \`opencode serve\` process (OpenCode 1.18.33) by the plugin, from \`npm run bench:memory\` (${new Date().toISOString()}, load average ${os.loadavg().map((x) => x.toFixed(2)).join(' / ')}): two servers side by side, the same sessions created in each: the server with the plugin minus one with only the memory probe (bench/memory-probe-plugin.mjs). "Settled": ${SAMPLES} paired samples, each right after a full garbage collection of Bun's JS heap in both (\`Bun.gc(true)\`); both have Bun's HTTP client started, as any OpenCode that has called a model. Split by /proc/PID/smaps: the addon's mapped code, other mapped files (OpenCode's own code pages touched for us), glibc's main heap, other anonymous memory (Bun's heaps, thread stacks and arenas). Two \`opencode serve\` processes differ by about ±2 MiB of anonymous memory whatever the plugin does, so the fixed part varies that much from run to run; the growth since 0 sessions is steadier. "Uncollected": one sample as Bun left it (Bun collects when it likes; earlier rounds read only this, against a server without any plugin: see NOTES.md "Memory").`,
    '',
    mdTable(header, rows),
  ].join('\n');
  fs.writeFileSync(
    path.join(HERE, CONTROL ? 'results-memory-control.json' : 'results-memory.json'),
    JSON.stringify({ generated: new Date().toISOString(), machine: M, samples: SAMPLES, levels, markdown }, null, 2) + '\n',
  );
  console.log(`wrote bench/${CONTROL ? 'results-memory-control.json' : 'results-memory.json'}`);
} finally {
  await Promise.allSettled([P?.stop(), N?.stop()]);
  await mock.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
}
process.exit(0);
