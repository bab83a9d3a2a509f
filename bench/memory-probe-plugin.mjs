// A measuring aid of `npm run bench:memory`, loaded into BOTH servers (with and without
// c2c-bridge), so what it costs cancels out of the paired difference. Not part of the package.
//
// On request it runs a full garbage collection of Bun's JS heap and reports the heap's size,
// so the bench can compare settled heaps instead of whatever Bun had not collected yet.
// At start it makes one request to its own server (see below).
// Protocol (files, polled every 100 ms, in the directory given as the plugin option `dir`):
// the bench writes `<dir>/request` (any content: a request id); the probe runs
// `Bun.gc(true)` twice, then writes `<dir>/reply.json` =
// `{ id, heapSize, heapCapacity, extraMemorySize, objectCount, protectedObjectCount,
//    objectTypeCounts }` (bun:jsc `heapStats()`, bytes and counts) and removes the request.
import fs from 'node:fs';
import path from 'node:path';

export const server = async (input, options) => {
  const dir = options?.dir;
  if (!dir || typeof Bun === 'undefined') return {};
  const { heapStats } = await import('bun:jsc');
  // Start Bun's HTTP client (its thread and buffers), as any OpenCode that has called a model
  // has: one request to this server, once this function has returned (earlier deadlocks).
  setTimeout(() => {
    const url = new URL(`/config?directory=${encodeURIComponent(input.directory)}`, String(input.serverUrl));
    fetch(url)
      .then((r) => r.arrayBuffer())
      .catch(() => {});
  }, 0);
  const request = path.join(dir, 'request');
  const timer = setInterval(() => {
    let id;
    try {
      id = fs.readFileSync(request, 'utf8');
    } catch {
      return;
    }
    fs.rmSync(request, { force: true });
    Bun.gc(true);
    Bun.gc(true);
    const h = heapStats();
    const reply = { id, heapSize: h.heapSize, heapCapacity: h.heapCapacity, extraMemorySize: h.extraMemorySize, objectCount: h.objectCount, protectedObjectCount: h.protectedObjectCount, objectTypeCounts: h.objectTypeCounts };
    fs.writeFileSync(path.join(dir, 'reply.json.tmp'), JSON.stringify(reply));
    fs.renameSync(path.join(dir, 'reply.json.tmp'), path.join(dir, 'reply.json'));
  }, 100);
  timer.unref?.();
  return {};
};
