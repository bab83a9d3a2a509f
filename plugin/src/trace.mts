/**
 * Timing marks for `npm run bench:e2e`, off unless the environment variable
 * `C2C_BRIDGE_TRACE` names a file. Each mark is one JSON line `{ev, pid, at, …}` (`at`: the
 * wall clock in ms with sub-ms resolution, comparable across processes of one machine),
 * appended asynchronously in batches so tracing adds no file write to the path it measures.
 * Marks carry ids and times only, never message text.
 */
import { appendFile } from "node:fs";

const file = process.env.C2C_BRIDGE_TRACE || undefined;
const lines: string[] = [];
let timer: ReturnType<typeof setTimeout> | undefined;

/** Whether marks are recorded (`C2C_BRIDGE_TRACE` set). */
export const tracing = file !== undefined;

/**
 * `performance.now()` aligned on a tick of `Date.now()`: the wall clock with sub-ms resolution,
 * comparable across processes (`performance.timeOrigin` is not: Node's is off by 1–10 ms).
 * Waits for one tick of `Date.now()` (≤ 1 ms), once, and only when tracing.
 */
function aligned(): number {
  const d0 = Date.now();
  let d = d0;
  while (d === d0) d = Date.now();
  return d - performance.now();
}
const offset = file === undefined ? 0 : aligned();

/** The wall clock in ms, sub-millisecond (see {@link aligned}). */
export function now(): number {
  return offset + performance.now();
}

/** Record one mark `ev` with `fields` (ids and times only). A no-op unless tracing. */
export function mark(ev: string, fields: Record<string, unknown> = {}): void {
  if (file === undefined) return;
  lines.push(JSON.stringify({ ev, pid: process.pid, at: now(), ...fields }));
  if (!timer) {
    timer = setTimeout(() => {
      timer = undefined;
      appendFile(file, lines.splice(0).join("\n") + "\n", { mode: 0o600 }, () => {});
    }, 50);
    timer.unref?.();
  }
}
