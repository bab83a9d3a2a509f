// Where a process's resident memory is: /proc/<pid>/smaps folded into named parts (MiB).
// Used by `npm run bench:memory` to split the RSS the plugin adds; asserts nothing.
import fs from 'node:fs';

/**
 * The resident set of `pid` by part, in MiB, and its thread count:
 * - `addon`: the mappings of a `.node` file (the c2c-bridge addon's code and data);
 *   `addonDirty`: its private dirty pages (relocated data);
 * - `files`: every other mapped file (OpenCode's own binary, libc, …);
 * - `heap`: `[heap]`, glibc's main malloc arena (grown by brk: the addon's allocations made
 *   on OpenCode's main thread);
 * - `stacks`: `[stack]` (the main thread's; other threads' stacks are anonymous);
 * - `anon`: every other anonymous mapping (Bun's JS heap and allocators, JIT code, glibc's
 *   per-thread arenas, thread stacks);
 * - `total`: the sum (VmRSS); `threads`: /proc/<pid>/status `Threads`.
 */
export function memParts(pid) {
  const text = fs.readFileSync(`/proc/${pid}/smaps`, 'utf8');
  const parts = { total: 0, addon: 0, addonDirty: 0, files: 0, heap: 0, stacks: 0, anon: 0 };
  let name = null;
  for (const line of text.split('\n')) {
    const head = /^[0-9a-f]+-[0-9a-f]+ \S+ \S+ \S+ \d+\s*(.*)$/.exec(line);
    if (head) {
      name = head[1];
      continue;
    }
    const m = /^(Rss|Private_Dirty):\s+(\d+) kB/.exec(line);
    if (!m || name === null) continue;
    const mib = Number(m[2]) / 1024;
    if (m[1] === 'Private_Dirty') {
      if (name.endsWith('.node')) parts.addonDirty += mib;
      continue;
    }
    parts.total += mib;
    if (name.endsWith('.node')) parts.addon += mib;
    else if (name === '[heap]') parts.heap += mib;
    else if (name === '[stack]') parts.stacks += mib;
    else if (name.startsWith('/') || name.startsWith('[vdso') || name.startsWith('[vvar')) parts.files += mib;
    else parts.anon += mib;
  }
  const status = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  parts.threads = Number(/Threads:\s+(\d+)/.exec(status)?.[1] ?? NaN);
  return parts;
}
