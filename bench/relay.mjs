// The relay's costs on loopback (issue 17): cross-node delivery latency (median, p99) and
// sustained throughput, through a real nats-server and two connector processes (the CLI),
// from a `send` on broker root A to the message in the recipient's inbox on root B.
//
// A benchmark, not a test: it asserts nothing about time. Goals (issue 17): median latency
// ≤ 5 ms, throughput ≥ 1,000 messages/s per node. Writes bench/results-relay.json (with a
// markdown section that `npm run bench` puts into RESULTS.md). Skips with one line when
// nats-server is not installed. BENCH_QUICK=1: fewer samples.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { fmt, mdTable, stats, textTable } from './lib.mjs';
import { natsServerPath, startConnector, startNats, writeCreds } from '../__tests__/e2e/relay/nats.mjs';

const HERE = path.dirname(fileURLToPath(import.meta.url));
const require = createRequire(import.meta.url);
const addon = require('../index.js');
const QUICK = !!process.env.BENCH_QUICK;
const OUT = path.join(HERE, 'results-relay.json');

function write(json) {
  fs.writeFileSync(OUT, JSON.stringify(json, null, 2) + '\n');
}

if (!natsServerPath()) {
  console.log('relay bench: skipped (nats-server not installed; apt-get install nats-server)');
  write({ generated: new Date().toISOString(), skipped: 'nats-server not installed', markdown: 'Skipped: nats-server not installed.' });
  process.exit(0);
}

const base = fs.mkdtempSync(path.join(process.env.BENCH_DIR ?? path.join(os.homedir(), '.cache'), 'c2c-bench-relay-'));
fs.chmodSync(base, 0o700);
const rootA = path.join(base, 'a');
const rootB = path.join(base, 'b');
fs.mkdirSync(rootA, { mode: 0o700 });
fs.mkdirSync(rootB, { mode: 0o700 });
const nats = await startNats(addon, base, ['a', 'b']);
const conns = [
  startConnector({ url: nats.url, root: rootA, node: 'a', creds: writeCreds(base, 'a'), extraArgs: ['--rate-burst', '1000000'] }),
  startConnector({ url: nats.url, root: rootB, node: 'b', creds: writeCreds(base, 'b'), extraArgs: ['--rate-burst', '1000000'] }),
];
const cleanup = async () => {
  await Promise.allSettled(conns.map((c) => c.stop()));
  await nats.stop();
  fs.rmSync(base, { recursive: true, force: true });
};

const sleep = (ms) => new Promise((r) => setTimeout(r, ms));
const open = (root, sid, alias) =>
  addon.Broker.open({ sessionId: sid, alias, root, directory: base, rateBurst: 1e7, inbound: 'accept' });
const amy = open(rootA, 'ses_bench_amy', 'amy');
const bob = open(rootB, 'ses_bench_bob', 'bob');

try {
  const until = Date.now() + 30000;
  while (!amy.listPeers().some((p) => p.alias === 'bob@b')) {
    if (Date.now() > until) throw new Error('bob@b never became visible on a');
    await sleep(50);
  }

  // Latency: one message at a time, from send() to the message seen in bob's inbox (woken by
  // the inbox watcher, as the plugin is).
  let waiting = null;
  bob.watch(() => {
    if (waiting && bob.peek().some((m) => m.messageId === waiting.id)) {
      const w = waiting;
      waiting = null;
      w.resolve(performance.now());
    }
  });
  const n = QUICK ? 40 : 300;
  const lat = [];
  for (let i = 0; i < n + 10; i++) {
    const arrived = new Promise((resolve) => { waiting = { id: null, resolve }; });
    const t0 = performance.now();
    const r = amy.send('bob@b', `ping ${i}`);
    waiting.id = r.messageId;
    if (bob.peek().some((m) => m.messageId === r.messageId)) waiting.resolve(performance.now());
    const t1 = await Promise.race([arrived, sleep(10000).then(() => null)]);
    if (t1 === null) throw new Error(`message ${i} did not arrive within 10 s`);
    if (i >= 10) lat.push(t1 - t0); // the first ten warm up
    bob.ack([r.messageId]);
  }
  bob.unwatch();
  const latency = stats(lat);

  // Throughput: a burst of messages sent as fast as send() returns; the figure is messages
  // over the time from the first send to the last arrival in bob's inbox.
  const total = QUICK ? 500 : 3000;
  const t0 = performance.now();
  for (let i = 0; i < total; i++) amy.send('bob@b', `bulk ${i}`);
  const sentAt = performance.now();
  const deadline = Date.now() + 120000;
  let got = 0;
  while ((got = bob.peek().length) < total) {
    if (Date.now() > deadline) throw new Error(`only ${got} of ${total} arrived within 120 s`);
    await sleep(20);
  }
  const doneAt = performance.now();
  const throughput = total / ((doneAt - t0) / 1000);
  const sendRate = total / ((sentAt - t0) / 1000);
  bob.ack(bob.peek().map((m) => m.messageId));

  // The relay pipeline alone (connector a publishing, the server, connector b storing): a
  // backlog queued while connector a was down (SIGKILL, so its mirror stays and sends still
  // queue), drained after it restarts; timed from the restart to the last arrival.
  await new Promise((resolve) => {
    conns[0].child.once('exit', resolve);
    conns[0].child.kill('SIGKILL');
  });
  for (let i = 0; i < total; i++) amy.send('bob@b', `backlog ${i}`);
  const r0 = performance.now();
  conns[0] = startConnector({ url: nats.url, root: rootA, node: 'a', creds: path.join(base, 'a.creds'), extraArgs: ['--rate-burst', '1000000'] });
  const deadline2 = Date.now() + 120000;
  while ((got = bob.peek().length) < total) {
    if (Date.now() > deadline2) throw new Error(`backlog: only ${got} of ${total} arrived within 120 s`);
    await sleep(20);
  }
  const pipeline = total / ((performance.now() - r0) / 1000);

  const rows = [
    ['cross-node latency (send → recipient inbox)', fmt(latency.min), fmt(latency.median), fmt(latency.p99), 'median ≤ 5 ms', latency.median <= 5 ? 'yes' : 'no'],
  ];
  const header = ['figure', 'min', 'median', 'p99', 'goal', 'meets'];
  const tput = [
    ['relay pipeline, backlog drained (connector start → last arrival)', `${pipeline.toFixed(0)}/s`, '≥ 1,000/s per node', pipeline >= 1000 ? 'yes' : 'no'],
    ['sends relayed end to end (first send → last arrival)', `${throughput.toFixed(0)}/s`, '', ''],
    ['send() into the relay outbox (one fsync\'d file each)', `${sendRate.toFixed(0)}/s`, '', ''],
  ];
  console.log(`\nrelay (loopback nats-server ${nats.url}, ${n} latency samples, ${total} messages)`);
  console.log(textTable(header, rows));
  console.log(textTable(['figure', 'value', 'goal', 'meets'], tput));
  const markdown = [
    `Loopback nats-server 2.9 (Debian), two broker roots, one connector process each (\`c2c-bridge relay\`); ${n} latency samples, ${total} messages for throughput. Each send is fsync'd into the sender's relay outbox, published with a PubAck, and appended (fsync'd) to the recipient's inbox before the JetStream ack. End-to-end throughput is bounded by send() itself (one fsync'd outbox file per message, as a local send is one fsync'd inbox write); the pipeline figure is the relay's own rate.`,
    '',
    mdTable(header, rows),
    '',
    mdTable(['figure', 'value', 'goal', 'meets'], tput),
  ].join('\n');
  write({ generated: new Date().toISOString(), quick: QUICK, latency, pipeline, throughput, sendRate, samples: n, messages: total, markdown });
  console.log('wrote bench/results-relay.json');
} finally {
  amy.close();
  bob.close();
  await cleanup();
}
process.exit(0);
