// The addon's memory over many send/ack cycles, in a fresh process run with --expose-gc:
//   node --expose-gc bench/child-heap.cjs <root> <cycles>
// One cycle: alice sends bob 200 B, bob peeks and acknowledges it (`delivered` receipt to
// alice), as the plugin does. Every cycles/10 cycles (after a full GC) it samples
// process.memoryUsage(); `native` = rss − V8's heapTotal, which is where the addon's own
// allocations (Rust's malloc heap) live. Prints one JSON line. Used by bench/run.mjs.
'use strict';
const addon = require('../index.js');
const [root, cyclesArg] = process.argv.slice(2);
const cycles = Number(cyclesArg);
const open = (name) =>
  addon.Broker.open({ sessionId: `ses_heap_${name}`, alias: name, root, directory: root, rateBurst: 1_000_000_000, rateWindowSecs: 1 });
const a = open('alice');
const b = open('bob');
const text = 'x'.repeat(200);
const sample = (i) => {
  global.gc();
  global.gc();
  const m = process.memoryUsage();
  return { cycle: i, rss: m.rss, heapUsed: m.heapUsed, heapTotal: m.heapTotal, external: m.external, native: m.rss - m.heapTotal };
};
const samples = [];
const every = Math.max(1, Math.floor(cycles / 10));
const t0 = performance.now();
for (let i = 0; i < cycles; i++) {
  if (i % every === 0) samples.push(sample(i));
  a.send('bob', text);
  const ids = b.peek().map((m) => m.messageId);
  b.acknowledge(ids, 'delivered');
}
samples.push(sample(cycles));
a.close();
b.close();
process.stdout.write(JSON.stringify({ cycles, seconds: (performance.now() - t0) / 1000, samples }) + '\n');
