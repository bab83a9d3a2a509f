// A broker peer in its own process, for the cross-process tests. argv[2] is a JSON plan:
//   { root, sessionId, alias, mode, ... }
// Modes:
//   echo        register, wait for one message, ack it, reply "echo:<content>" to its sender
//   burst       register, print ready, wait for "go" on stdin, send `count` messages to `to`
//               (reports the slowest single send, which includes waiting for the inbox lock)
//   send        register, send `content` to `to`, exit
//   watch-throw register, watch with a callback that always throws; exit 0 once `expect`
//               messages are in the inbox (proves the process survived every throw)
// Output: one JSON object per line, each with an `event` field; failures print
// {"event":"error","code","message"} and exit 1.
import { createRequire } from 'node:module';

const require = createRequire(import.meta.url);
const { Broker } = require('../../index.js');

const plan = JSON.parse(process.argv[2]);
const out = (o) => process.stdout.write(`${JSON.stringify(o)}\n`);
const sleep = (ms) => new Promise((r) => setTimeout(r, ms));

async function main() {
  const b = Broker.open({
    root: plan.root, sessionId: plan.sessionId, alias: plan.alias,
    ...(plan.lockTimeoutMs ? { lockTimeoutMs: plan.lockTimeoutMs } : {}),
    ...(plan.rateBurst ? { rateBurst: plan.rateBurst } : {}),
  });
  out({ event: 'ready', pid: process.pid, sessionId: b.sessionId, alias: b.alias });

  if (plan.mode === 'echo') {
    let woke = 0;
    b.watch(() => { woke += 1; });
    const deadline = Date.now() + 20000;
    let msgs = [];
    while (msgs.length === 0 && Date.now() < deadline) {
      msgs = b.peek();
      if (msgs.length === 0) await sleep(20);
    }
    if (msgs.length === 0) throw Object.assign(new Error('no message arrived'), { code: 'TIMEOUT' });
    const m = msgs[0];
    const ackReport = b.ack([m.messageId]);
    const receipt = b.send(m.fromAlias, `echo:${m.content}`);
    out({ event: 'echoed', received: m, ackReport, receipt, woke });
  } else if (plan.mode === 'burst') {
    await new Promise((resolve) => {
      let buf = '';
      process.stdin.on('data', (d) => {
        buf += d;
        if (buf.includes('go')) resolve();
      });
    });
    const ids = [];
    let maxSendMs = 0;
    for (let i = 0; i < plan.count; i++) {
      const t0 = Date.now();
      ids.push(b.send(plan.to, `${plan.alias}:${i}`).messageId);
      maxSendMs = Math.max(maxSendMs, Date.now() - t0);
    }
    out({ event: 'done', ids, maxSendMs });
  } else if (plan.mode === 'send') {
    const receipt = b.send(plan.to, plan.content);
    out({ event: 'sent', receipt, sentAtMs: Date.now() });
  } else if (plan.mode === 'watch-throw') {
    let calls = 0;
    b.watch(() => {
      calls += 1;
      out({ event: 'callback', calls });
      throw new Error(`callback failure ${calls}`);
    });
    out({ event: 'watching' });
    const deadline = Date.now() + 20000;
    while (b.peek().length < plan.expect && Date.now() < deadline) await sleep(20);
    // Let the watcher deliver the events of the last write before reporting.
    await sleep(200);
    out({ event: 'done', calls, contents: b.peek().map((m) => m.content) });
  } else {
    throw new Error(`unknown mode ${plan.mode}`);
  }
  b.close();
}

main().then(
  () => process.exit(0),
  (e) => {
    out({ event: 'error', code: e.code ?? null, message: String(e.message) });
    process.exit(1);
  },
);
