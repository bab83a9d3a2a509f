// `npm run bench:memory`: the resident memory the plugin adds to an `opencode serve` process
// with 1, 100 and 1,000 root sessions registered (OpenCode 1.18.33, the e2e harness).
//
// Two servers side by side, the same mock model and config except the plugin: P loads
// c2c-bridge (its own broker root), N loads nothing. At each level both get the same number
// of sessions (`POST /session`); we wait until P's broker registry lists them all, let both
// settle, and read VmRSS from /proc/<pid>/status a few times. The figure is the median of
// RSS(P) − RSS(N). OpenCode's runtime (Bun/JSC) collects garbage when it likes, so a few MiB
// of noise are expected; the level-to-level trend is what to read. A benchmark: it asserts
// nothing. Writes bench/results-memory.json (folded into bench/RESULTS.md by `npm run bench`).
// Options: BENCH_MEMORY_LEVELS (default "1,100,1000").
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { client, startMockModel, startOpencode, REPO_ROOT } from '../__tests__/e2e/harness/index.mjs';
import { machine, mdTable, textTable } from './lib.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const LEVELS = (process.env.BENCH_MEMORY_LEVELS ?? '1,100,1000').split(',').map(Number);
const GOAL_MIB_AT_100 = 10;
const started = Date.now();
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'c2c-bench-mem-'));
const brokerRoot = path.join(tmp, 'broker');
fs.mkdirSync(brokerRoot, { mode: 0o700 });
const M = machine(brokerRoot);
console.log(`c2c-bridge memory bench — ${M.cores} cores, ${M.kernel}, Node ${M.node}, load ${M.loadavg.join(' ')}`);

/** VmRSS, or one of its parts (RssAnon: heap and stacks; RssFile: mapped files such as the addon's code), in MiB. */
const rssMiB = (pid, field = 'VmRSS') => {
  const m = new RegExp(`${field}:\\s+(\\d+) kB`).exec(fs.readFileSync(`/proc/${pid}/status`, 'utf8'));
  return m ? Number(m[1]) / 1024 : NaN;
};
const median = (xs) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const registered = () => {
  try {
    return JSON.parse(fs.readFileSync(path.join(brokerRoot, 'registry.json'), 'utf8')).length;
  } catch {
    return 0;
  }
};

const mock = await startMockModel({ script: () => ({ text: 'ok' }) });
let P, N;
try {
  [P, N] = await Promise.all([
    startOpencode({ modelBaseURL: mock.baseURL('p'), plugins: [[REPO_ROOT, { brokerRoot }]] }),
    startOpencode({ modelBaseURL: mock.baseURL('n'), plugins: [] }),
  ]);
  const cp = client(P);
  const cn = client(N);
  /** Settle, then sample both servers' RSS `n` times. */
  const sample = async (n = 7) => {
    await sleep(2000);
    const d = [];
    const p = [];
    const q = [];
    const anon = [];
    for (let i = 0; i < n; i++) {
      const a = rssMiB(P.pid);
      const b = rssMiB(N.pid);
      p.push(a);
      q.push(b);
      d.push(a - b);
      anon.push(rssMiB(P.pid, 'RssAnon') - rssMiB(N.pid, 'RssAnon'));
      await sleep(250);
    }
    return { plugin: median(p), none: median(q), added: median(d), addedAnon: median(anon) };
  };
  const rows = [];
  const levels = [];
  const base = await sample();
  levels.push({ sessions: 0, ...base });
  rows.push(['0 (plugin loaded, nothing registered)', base.plugin.toFixed(1), base.none.toFixed(1), base.added.toFixed(1), base.addedAnon.toFixed(1), '']);
  console.log(`  0 sessions: with plugin ${base.plugin.toFixed(1)} MiB, without ${base.none.toFixed(1)} MiB, added ${base.added.toFixed(1)} MiB`);
  let made = 0;
  for (const level of LEVELS) {
    const t0 = Date.now();
    while (made < level) {
      const batch = Math.min(10, level - made);
      await Promise.all(Array.from({ length: batch }, (_, k) => Promise.all([cp.createSession({ title: `p${made + k}` }), cn.createSession({ title: `n${made + k}` })])));
      made += batch;
    }
    const deadline = Date.now() + 120_000;
    while (registered() < level && Date.now() < deadline) await sleep(100);
    const regs = registered();
    const s = await sample();
    levels.push({ sessions: level, registered: regs, secondsToRegister: (Date.now() - t0) / 1000, ...s });
    const goal = level === 100 ? `≤ ${GOAL_MIB_AT_100} MiB: ${s.added <= GOAL_MIB_AT_100 ? 'meets' : 'MISSES'}` : '';
    rows.push([`${level} (${regs} registered)`, s.plugin.toFixed(1), s.none.toFixed(1), s.added.toFixed(1), s.addedAnon.toFixed(1), goal]);
    console.log(`  ${level} sessions (${regs} registered): with plugin ${s.plugin.toFixed(1)} MiB, without ${s.none.toFixed(1)} MiB, added ${s.added.toFixed(1)} MiB (anonymous ${s.addedAnon.toFixed(1)})`);
  }
  const header = ['root sessions', 'RSS with plugin (MiB)', 'RSS without (MiB)', 'added by the plugin (MiB, median of paired samples)', 'of which anonymous (RssAnon; the rest is mapped files, e.g. the addon\'s code pages)', 'goal'];
  const secs = ((Date.now() - started) / 1000).toFixed(1);
  console.log('\n' + textTable(header, rows) + `\ntotal ${secs} s`);
  const markdown = [
    `RSS added to an \`opencode serve\` process (OpenCode 1.18.33) by the plugin, from \`npm run bench:memory\` (${new Date().toISOString()}, load average ${os.loadavg().map((x) => x.toFixed(2)).join(' / ')}): two servers side by side, the same config but the plugin, the same number of sessions created in each; VmRSS sampled 7 times after a 2 s settle, median of the paired differences. Bun collects garbage when it likes: expect a few MiB of noise.`,
    '',
    mdTable(header, rows),
  ].join('\n');
  fs.writeFileSync(path.join(HERE, 'results-memory.json'), JSON.stringify({ generated: new Date().toISOString(), machine: M, levels, markdown }, null, 2) + '\n');
  console.log('wrote bench/results-memory.json');
} finally {
  await Promise.allSettled([P?.stop(), N?.stop()]);
  await mock.stop();
  fs.rmSync(tmp, { recursive: true, force: true });
}
process.exit(0);
