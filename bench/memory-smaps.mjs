// Where a process's resident memory is: /proc/<pid>/smaps folded into named parts (MiB).
// Used by `npm run bench:memory` to split the RSS the plugin adds; asserts nothing.
import fs from 'node:fs';

/**
 * The resident set of `pid` by part, in MiB: `addon` (the c2c-bridge .node file's mappings),
 * `addonDirty` (its private dirty pages: relocated data), `files` (every other mapped file),
 * `heap` ([heap]: glibc's main malloc arena, grown by brk), `stacks` ([stack] and thread
 * stacks are anonymous; only the main one is named), `anon` (other anonymous mappings: Bun's
 * JS heap and allocators, glibc's per-thread arenas, thread stacks), `anonArena` (the part of
 * `anon` in 64 MiB-reserved regions, glibc's per-thread arenas, approximated by size), `threads`.
 */
export function memParts(pid) {
  const text = fs.readFileSync(`/proc/${pid}/smaps`, 'utf8');
  const parts = { total: 0, addon: 0, addonDirty: 0, files: 0, heap: 0, stacks: 0, anon: 0, anonBig: 0, swapLike: 0 };
  let cur = null;
  for (const line of text.split('\n')) {
    const head = /^([0-9a-f]+)-([0-9a-f]+) \S+ \S+ \S+ \d+\s*(.*)$/.exec(line);
    if (head) {
      const size = (parseInt(head[2], 16) - parseInt(head[1], 16)) / 1024;
      cur = { name: head[3], size };
      continue;
    }
    const m = /^(Rss|Private_Dirty):\s+(\d+) kB/.exec(line);
    if (!m || !cur) continue;
    const kb = Number(m[2]) / 1024;
    const name = cur.name;
    if (m[1] === 'Private_Dirty') {
      if (name.endsWith('.node')) parts.addonDirty += kb;
      continue;
    }
    parts.total += kb;
    if (name.endsWith('.node')) parts.addon += kb;
    else if (name === '[heap]') parts.heap += kb;
    else if (name === '[stack]') parts.stacks += kb;
    else if (name.startsWith('/') || name.startsWith('[vdso') || name.startsWith('[vvar')) parts.files += kb;
    else {
      parts.anon += kb;
      if (cur.size >= 32 * 1024) parts.anonBig += kb;
    }
  }
  const st = fs.readFileSync(`/proc/${pid}/status`, 'utf8');
  parts.threads = Number(/Threads:\s+(\d+)/.exec(st)?.[1] ?? NaN);
  return parts;
}
