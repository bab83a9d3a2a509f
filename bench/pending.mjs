// `node bench/pending.mjs`: openPendingReply and the first (stamping) checkPendingReply at
// 10 / 100 / 1,000 slots (and as many registrations), each paired with the fsync floor in the
// same loop (issue 16). A benchmark, not a test: it asserts nothing about time.
//
// A/B: `PENDING_ADDONS=/path/a.node,/path/b.node node bench/pending.mjs` loads each addon and
// interleaves them in one loop (floor, A, B, floor, A, B, …), each on its own root filled
// alike, so the ratios of A and B are paired with the same floor samples. Caution: the two
// addons then share one process heap, and one's large allocations slow the other's (measured:
// a 1,000-slot first check 0.17 ms alone, 2 ms interleaved with the old addon); for CPU
// figures, run one addon per process, back to back (`PENDING_ADDONS=/path/a.node`). Without
// it, the project's addon (`index.js`) is measured.
// Options: PENDING_N (opens per size, default 100), PENDING_SIZES (default 10,100,1000),
// BENCH_DIR (parent of the roots; default ~/.cache, a real disk where fsync costs).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { fmt, stats } from './lib.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const REPO = path.resolve(HERE, '..');
const require = createRequire(import.meta.url);
const addons = (process.env.PENDING_ADDONS ?? '')
  .split(',')
  .filter(Boolean)
  .map((p) => ({ name: path.basename(p), addon: require(path.resolve(p)) }));
if (addons.length === 0) addons.push({ name: 'index.js', addon: require('../index.js') });
const N = Number(process.env.PENDING_N ?? 100);
const SIZES = (process.env.PENDING_SIZES ?? '10,100,1000').split(',').map(Number);

const BENCH_PARENT = process.env.BENCH_DIR ?? path.join(os.homedir(), '.cache');
fs.mkdirSync(BENCH_PARENT, { recursive: true });
const BASE = fs.mkdtempSync(path.join(BENCH_PARENT, 'c2c-bench-pending-'));
fs.chmodSync(BASE, 0o700);
process.on('exit', () => fs.rmSync(BASE, { recursive: true, force: true }));

let rootCounter = 0;
function newRoot(addon, tag) {
  const r = path.join(BASE, `${tag}-${rootCounter++}`);
  fs.mkdirSync(r, { mode: 0o700 });
  return addon.checkRoot(r);
}
function open(addon, root, name) {
  return addon.Broker.open({
    sessionId: `ses_${name}`,
    alias: name,
    root,
    directory: REPO,
    pendingPerAliasCap: 1_000_000,
    pendingGlobalCap: 1_000_000,
  });
}
function fillRegistry(root, n) {
  const stat = fs.readFileSync('/proc/self/stat', 'utf8');
  const startTime = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
  const now = Date.now() / 1000;
  const regs = [];
  for (let i = 0; i < n; i++) {
    regs.push({ session_id: `ses_filler_${i}`, alias: `filler-${i}`, pid: process.pid, pid_start_time: startTime, registered_at: now, client_type: 'opencode' });
  }
  fs.writeFileSync(path.join(root, 'registry.json'), JSON.stringify(regs), { mode: 0o600 });
}
function fillPending(root, n) {
  const now = Date.now() / 1000;
  const slots = [];
  for (let i = 0; i < n; i++) {
    slots.push({ perm_id: `per_filler_${i}`, kind: 'permission', requester_session_id: `ses_filler_${i % 1000}`, requester_alias: `filler-${i % 1000}`, supervisors: ['bench-b'], created_at: now, expires_at: now + 3600, fallthrough_fired_at: [], resolved_at: null, verdict: null });
  }
  fs.writeFileSync(path.join(root, 'pending_permissions.json'), JSON.stringify(slots), { mode: 0o600 });
}
const FLOOR_BODY = Buffer.from(JSON.stringify([{ message_id: '00000000-0000-4000-8000-000000000000', content: 'x'.repeat(120) }]));
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
const now = () => performance.now();

console.log(`load average ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}; ${N} opens per size; roots under ${BASE}`);
for (const size of SIZES) {
  const floorRoot = newRoot(addons[0].addon, `floor${size}`);
  const runs = addons.map(({ name, addon }) => {
    const root = newRoot(addon, `p${size}`);
    fillRegistry(root, size - 2);
    fillPending(root, size);
    return { name, a: open(addon, root, 'bench-a'), b: open(addon, root, 'bench-b'), open: [], check: [], ids: [] };
  });
  const floorT = [];
  for (let i = 0; i < N + 5; i++) {
    const tf = now();
    fsyncReplace(floorRoot);
    const t0 = now();
    if (i >= 5) floorT.push(t0 - tf);
    for (const r of runs) {
      const id = `per_bench_${size}_${i}`;
      const s = now();
      r.a.openPendingReply(id, 'permission', ['bench-b']);
      const e = now();
      r.ids.push(id);
      if (i >= 5) r.open.push(e - s);
    }
  }
  // first (stamping) checks, interleaved
  for (let i = 0; i < N + 5; i++) {
    for (const r of runs) {
      const s = now();
      const out = r.b.checkPendingReply(r.ids[i]);
      const e = now();
      if (!out.valid) throw new Error(`check ${r.ids[i]} not valid: ${JSON.stringify(out)}`);
      if (i >= 5) r.check.push(e - s);
    }
  }
  const fl = stats(floorT);
  console.log(`\n${size} slots: fsync floor (paired) median ${fmt(fl.median)}  p90 ${fmt(fl.p90)}`);
  for (const r of runs) {
    const o = stats(r.open);
    const c = stats(r.check);
    console.log(`  ${r.name.padEnd(24)} openPendingReply median ${fmt(o.median).padStart(9)} (${(o.median / fl.median).toFixed(2)}× floor)  p90 ${fmt(o.p90).padStart(9)} | first check median ${fmt(c.median).padStart(9)}  p90 ${fmt(c.p90).padStart(9)}`);
    r.a.close();
    r.b.close();
  }
}
console.log(`\nload average at the end ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
