// A child process for __tests__/addon/host-safety.test.mjs: loads the addon in the main thread
// and in worker threads, watches with callbacks that throw, and ends the way argv[2] says.
// It prints one line "ready" before it ends; the test checks the exit code and signal.
const { Worker, isMainThread, workerData, parentPort } = require('node:worker_threads');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const addon = require(path.resolve(__dirname, '../../index.js'));

function open(root, name) {
  return addon.Broker.open({ root, sessionId: `ses_${name}_${process.pid}`, alias: `${name}-${process.pid}` });
}

if (!isMainThread) {
  // Worker: own handle, a watch whose callback throws, a send to the main thread's alias.
  const b = open(workerData.root, 'w');
  b.watch(() => {
    throw new Error('worker callback throws');
  });
  b.send(workerData.to, 'from the worker');
  parentPort.postMessage('watching');
  if (workerData.mode === 'worker-throws') setTimeout(() => { throw new Error('uncaught in worker'); }, 20);
  // Keep the worker alive until it is terminated (or the process ends).
  setInterval(() => {}, 1000);
} else {
  const mode = process.argv[2];
  const root = fs.mkdtempSync(path.join(os.tmpdir(), 'c2c-host-'));
  fs.chmodSync(root, 0o700);
  const a = open(root, 'a');
  let calls = 0;
  a.watch(() => {
    calls += 1;
    throw new Error('main callback throws');
  });
  const w = new Worker(__filename, { workerData: { root, to: a.alias, mode } });
  w.on('error', () => {}); // an uncaught error in the worker ends the worker, not us
  w.on('message', async () => {
    // Wait until the main thread's callback has run (the worker's message arrived).
    const t0 = Date.now();
    while (calls === 0 && Date.now() - t0 < 10_000) await new Promise((r) => setTimeout(r, 20));
    console.log(`ready calls=${calls}`);
    if (mode === 'exit-7') process.exit(7); // live watches in both threads
    if (mode === 'terminate-worker') {
      await w.terminate();
      // The main thread's watch still works once the worker's environment is gone.
      const before = calls;
      open(root, 'b').send(a.alias, 'after the worker is gone');
      const t1 = Date.now();
      while (calls === before && Date.now() - t1 < 10_000) await new Promise((r) => setTimeout(r, 20));
      if (calls === before) process.exit(90);
      await new Promise((r) => setTimeout(r, 200));
      process.exit(3);
    }
    if (mode === 'worker-throws') {
      await new Promise((r) => setTimeout(r, 300));
      process.exit(5);
    }
    if (mode === 'natural') {
      // Nothing keeps the event loop alive but the worker: end it and let the process drain
      // with the main thread's watch still open (the watcher must not hold the process).
      await w.terminate();
    }
  });
}
