// Plugin cold start, measured in a fresh process: from just before `require('../index.js')`
// (addon load) to a registered Broker. Prints one JSON line. Used by bench/run.mjs.
'use strict';
const t0 = performance.now(); // ms since this process started (performance.timeOrigin)
const addon = require('../index.js');
const t1 = performance.now();
const [root, sid] = process.argv.slice(2);
const b = addon.Broker.open({ sessionId: sid, alias: sid.replace(/^ses_/, 'cold-'), root, directory: root });
const t2 = performance.now();
b.close();
process.stdout.write(JSON.stringify({ boot: t0, require: t1 - t0, open: t2 - t1, total: t2 - t0 }) + '\n');
