// Shared helpers of the benchmarks: timing loops, statistics, machine facts, formatting.
// A benchmark asserts nothing about time; these only measure and print.
import { execFileSync } from 'node:child_process';
import os from 'node:os';
import fs from 'node:fs';
import path from 'node:path';

/** Sorted-sample statistics; `ms` values in, milliseconds out. */
export function stats(samplesMs) {
  const s = [...samplesMs].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.max(0, Math.round((s.length - 1) * p)))];
  return { n: s.length, min: s[0], median: q(0.5), p90: q(0.9), p99: q(0.99), max: s[s.length - 1] };
}

const nowMs = () => Number(process.hrtime.bigint()) / 1e6;

/**
 * Time `fn` `iterations` times (after `warmup` calls). Sub-10-µs operations are timed in
 * batches of `batch` calls (per-call time = batch time / batch), so the clock read does not
 * dominate; every sample is then a batch mean (min/p99 are of batch means — said in the table).
 * `fn(i)` may return a value that is kept alive.
 */
export function measure(fn, { iterations = 200, warmup = 20, batch = 1, setup } = {}) {
  let sink;
  for (let i = 0; i < warmup; i++) {
    if (setup) setup(i);
    sink = fn(i);
  }
  const out = [];
  for (let i = 0; i < iterations; i++) {
    if (setup) setup(i);
    const t = nowMs();
    for (let k = 0; k < batch; k++) sink = fn(i * batch + k);
    out.push((nowMs() - t) / batch);
  }
  globalThis.__benchSink = sink;
  return stats(out);
}

/**
 * The file system holding `dir`, as a benchmark reader needs it: the type from the mount
 * table, and for ext3/ext4 whether it has a journal and the options that decide whether a
 * replace may rename before its fsync (store::mounts: a journal in data=ordered/journal with
 * auto_da_alloc). `stat -f` cannot tell ext2 from ext4, nor a journal-less ext4.
 */
function describeFs(dir, sh) {
  const line = sh('findmnt', ['-n', '-o', 'FSTYPE,SOURCE', '--target', dir]);
  const [type, source] = line.split(/\s+/);
  if (!type || type === 'unknown') return sh('stat', ['-f', '-c', '%T', dir]);
  if (type !== 'ext4' && type !== 'ext3') return type;
  const dev = path.basename(source ?? '');
  let options = '';
  try {
    options = fs.readFileSync(`/proc/fs/ext4/${dev}/options`, 'utf8');
  } catch {
    return `${type} (options unreadable)`;
  }
  const data = /^data=(\w+)/m.exec(options)?.[1];
  const journal = data ? `journal, data=${data}` : 'no journal';
  const ada = /^auto_da_alloc$/m.test(options) ? 'auto_da_alloc' : 'noauto_da_alloc';
  return `${type} (${journal}, ${ada})`;
}

export function machine(rootDir) {
  const sh = (cmd, args) => {
    try {
      return execFileSync(cmd, args, { encoding: 'utf8' }).trim();
    } catch {
      return 'unknown';
    }
  };
  const cpus = os.cpus();
  return {
    cores: cpus.length,
    cpu: cpus[0]?.model ?? 'unknown',
    kernel: `${os.type()} ${os.release()}`,
    rootFs: describeFs(rootDir, sh),
    rootDir,
    node: process.version,
    memGiB: +(os.totalmem() / 2 ** 30).toFixed(1),
    loadavg: os.loadavg().map((x) => +x.toFixed(2)),
  };
}

/** ms → human string with a sensible unit. */
export function fmt(ms) {
  if (ms === undefined || ms === null || Number.isNaN(ms)) return '–';
  const a = Math.abs(ms);
  if (a < 0.001) return `${(ms * 1e6).toFixed(0)} ns`;
  if (a < 1) return `${(ms * 1e3).toFixed(a < 0.01 ? 2 : 1)} µs`;
  if (a < 1000) return `${ms.toFixed(a < 10 ? 2 : 1)} ms`;
  return `${(ms / 1000).toFixed(2)} s`;
}

export function ratio(x, base) {
  if (!base || x === undefined) return '–';
  const r = x / base;
  return r >= 100 ? `${r.toFixed(0)}×` : r >= 10 ? `${r.toFixed(1)}×` : `${r.toFixed(2)}×`;
}

/** A plain-text table for the terminal. */
export function textTable(header, rows) {
  const w = header.map((h, i) => Math.max(h.length, ...rows.map((r) => String(r[i] ?? '').length)));
  const line = (r) => r.map((c, i) => String(c ?? '').padEnd(w[i])).join('  ');
  return [line(header), w.map((n) => '-'.repeat(n)).join('  '), ...rows.map(line)].join('\n');
}

/** A Markdown table. */
export function mdTable(header, rows) {
  const esc = (c) => String(c ?? '').replace(/\|/g, '\\|');
  return [
    `| ${header.map(esc).join(' | ')} |`,
    `| ${header.map(() => '---').join(' | ')} |`,
    ...rows.map((r) => `| ${r.map(esc).join(' | ')} |`),
  ].join('\n');
}
