// A watch lives as long as its handle is open, not as long as the JS object survives garbage
// collection (issue 11 item 5), and all handles of a root share one watcher (item 4). Runs a
// child Node with --expose-gc so the collection really happens.
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect, test } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..', '..');

const CHILD = `
const fs = require('node:fs'), os = require('node:os'), path = require('node:path');
const addon = require(${JSON.stringify(path.join(ROOT, 'index.js'))});
const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'c2c-watch-gc-'));
const root = path.join(dir, 'broker');
const inotify = () => fs.readdirSync('/proc/self/fd').filter((fd) => { try { return fs.readlinkSync('/proc/self/fd/' + fd) === 'anon_inode:inotify'; } catch { return false; } }).length;
const before = inotify();
let woke = 0;
let collected = 0;
const fin = new FinalizationRegistry(() => { collected += 1; });
(function () {
  // Opened, watched, and never referenced again.
  for (let i = 0; i < 3; i++) {
    const b = addon.Broker.open({ sessionId: 'ses_gc' + i, alias: 'gc' + i, root });
    b.watch(() => { woke += 1; });
    fin.register(b, i);
  }
})();
const shared = inotify() - before;
const sender = addon.Broker.open({ sessionId: 'ses_sender', alias: 'sender', root });
(async () => {
  for (let i = 0; i < 5; i++) { global.gc(); await new Promise((r) => setTimeout(r, 50)); }
  sender.send('gc1', 'still watched?');
  for (let i = 0; i < 100 && woke === 0; i++) await new Promise((r) => setTimeout(r, 20));
  console.log(JSON.stringify({ woke, shared, collected }));
  sender.close();
  fs.rmSync(dir, { recursive: true, force: true });
  process.exit(0);
})();
`;

test('an unreferenced, collected handle keeps its watch; three handles share one inotify instance', () => {
  const r = spawnSync(process.execPath, ['--expose-gc', '-e', CHILD], { encoding: 'utf8', timeout: 60_000 });
  expect(r.status, r.stderr).toBe(0);
  const out = JSON.parse(r.stdout.trim().split('\n').pop());
  expect(out.shared).toBe(1);
  // The handles really were collected...
  expect(out.collected).toBe(3);
  // ...and the watch of gc1 still woke it.
  expect(out.woke).toBeGreaterThanOrEqual(1);
});
