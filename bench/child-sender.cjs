// The other process of the delivery benchmark: opens a Broker as `bench-sender` in the root
// given on argv and, for each IPC message `{i, to}`, sends one message and reports the wall
// clock (process.hrtime in ms: CLOCK_MONOTONIC, the parent's clock too) right before and right
// after send().
'use strict';
const addon = require('../index.js');
const [root] = process.argv.slice(2);
const b = addon.Broker.open({ sessionId: 'ses_bench_sender', alias: 'bench-sender', root, directory: root, rateBurst: 1_000_000 });
const wall = () => Number(process.hrtime.bigint()) / 1e6;
process.on('message', (m) => {
  if (m.stop) {
    b.close();
    process.disconnect();
    return;
  }
  const before = wall();
  const r = b.send(m.to, `delivery sample ${m.i}`);
  const after = wall();
  process.send({ i: m.i, before, after, messageId: r.messageId });
});
process.send({ ready: true });
