// `npm run bench:watchers`: what watching N sessions of one broker root costs this process
// (issue 11): inotify instances (fds to anon_inode:inotify), threads (/proc/self/task) and
// open fds, for 1, 100 and 1,000 watched sessions. A measurement, not a test: it asserts
// nothing. Linux only. Writes bench/results-watchers.json.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const addon = createRequire(import.meta.url)('../index.js');
const counts = () => {
  const fds = fs.readdirSync('/proc/self/fd');
  let inotify = 0;
  for (const fd of fds) {
    try {
      if (fs.readlinkSync(`/proc/self/fd/${fd}`) === 'anon_inode:inotify') inotify += 1;
    } catch {
      /* closed meanwhile */
    }
  }
  return { inotify, threads: fs.readdirSync('/proc/self/task').length, fds: fds.length };
};

const base = counts();
const rows = [];
for (const n of [1, 100, 1000]) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'c2c-watchers-'));
  const root = path.join(dir, 'broker');
  const handles = [];
  const t0 = process.hrtime.bigint();
  let failed = null;
  for (let i = 0; i < n; i++) {
    const b = addon.Broker.open({ sessionId: `ses_w${i}`, alias: `w${i}`, root });
    handles.push(b);
    try {
      b.watch(() => {});
    } catch (err) {
      failed = `watch() #${i + 1} failed: ${err.code} ${String(err.message).slice(0, 80)}`;
      break;
    }
  }
  const openMs = Number(process.hrtime.bigint() - t0) / 1e6;
  const c = counts();
  rows.push({
    sessions: n,
    inotifyInstances: c.inotify - base.inotify,
    threads: c.threads - base.threads,
    fds: c.fds - base.fds,
    openAndWatchMsPerSession: +(openMs / n).toFixed(3),
    failed,
  });
  for (const b of handles) b.close();
  const after = counts();
  rows[rows.length - 1].inotifyAfterClose = after.inotify - base.inotify;
  fs.rmSync(dir, { recursive: true, force: true });
}
console.table(rows);
if (process.env.BENCH_LABEL) console.log(`label: ${process.env.BENCH_LABEL}`);
fs.writeFileSync(path.resolve(HERE, process.env.BENCH_OUT ?? 'results-watchers.json'), JSON.stringify({ node: process.version, rows }, null, 2) + '\n');
