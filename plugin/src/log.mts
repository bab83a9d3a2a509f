/**
 * Logging for the plugin: every line goes to stderr at once and to OpenCode's log through
 * `client.app.log`, which is only called once the plugin function has returned (calling the
 * server's own API earlier deadlocks the first request — OpenCode 1.18.33), one request at a
 * time (lines that queue up meanwhile are joined: {@link HostLog}).
 */
import type { Addon } from "./addon.mjs";
import type { HostClient } from "./host.mjs";

/** Log levels accepted by `client.app.log`. */
export type Level = "debug" | "info" | "warn" | "error";

/** A logger bound to one plugin instance. */
export interface Logger {
  log(level: Level, message: string, extra?: Record<string, unknown>): void;
  /** Like `log`, to OpenCode's log only (never stderr): for high-volume diagnostic lines. */
  hostLog(level: Level, message: string): void;
  /** Allow calls to `client.app.log` (after the plugin function returned); flushes the backlog. */
  ready(): void;
}

const SERVICE = "c2c-bridge";

/** Lines that may wait for OpenCode's log; more are counted, and the count is logged. */
const MAX_QUEUED = 1000;
/** Lines joined into one `client.app.log` request at most. */
const MAX_JOINED = 50;
/** How long one `client.app.log` request may take before the next is sent anyway, ms. */
const REQUEST_TIMEOUT_MS = 5000;

type Body = { service: string; level: Level; message: string; extra?: Record<string, unknown> };

/**
 * Lines on their way to OpenCode's log: one `client.app.log` request at a time; the lines that
 * queue up meanwhile go in one request per run of the same level (joined by newlines, at most
 * {@link MAX_JOINED}; a line with `extra` goes alone), in order.
 *
 * Why: under `opencode serve` the plugin's client is a real HTTP client of the server
 * (OpenCode 1.18.33 gives it the server's URL), so each line is an HTTP request to it. One
 * request per line, all at once (100 sessions registering together: 100 requests) left
 * ≈ 2 MiB more resident in the server after a full GC (bench:memory, NOTES "Memory").
 * At most {@link MAX_QUEUED} lines wait; beyond that lines are counted and the count is logged
 * once the queue drains (stderr has every `log` line regardless). Never throws.
 */
class HostLog {
  private readonly queue: Body[] = [];
  private sending = false;
  private dropped = 0;

  constructor(private readonly client: HostClient | undefined) {}

  push(level: Level, message: string, extra?: Record<string, unknown>): void {
    if (this.queue.length >= MAX_QUEUED) {
      this.dropped += 1;
      return;
    }
    this.queue.push({ service: SERVICE, level, message, ...(extra ? { extra } : {}) });
    if (!this.sending) this.pump();
  }

  private pump(): void {
    const body = this.next();
    if (!body) {
      this.sending = false;
      return;
    }
    this.sending = true;
    let request: Promise<unknown> | undefined;
    try {
      request = this.client?.app?.log({ body });
    } catch {
      // logging must never throw
    }
    let timer: ReturnType<typeof setTimeout> | undefined;
    const timeout = new Promise<void>((resolve) => {
      timer = setTimeout(resolve, REQUEST_TIMEOUT_MS);
      timer.unref?.();
    });
    void Promise.race([Promise.resolve(request).catch(() => {}), timeout]).then(() => {
      clearTimeout(timer);
      this.pump();
    });
  }

  private next(): Body | undefined {
    const first = this.queue.shift();
    if (!first) {
      if (this.dropped === 0) return undefined;
      const n = this.dropped;
      this.dropped = 0;
      return { service: SERVICE, level: "warn", message: `${n} log line(s) were not sent to OpenCode's log: its log API did not keep up (stderr has them)` };
    }
    if (first.extra) return first;
    const lines = [first.message];
    while (lines.length < MAX_JOINED && this.queue[0] && this.queue[0].level === first.level && !this.queue[0].extra) {
      lines.push((this.queue.shift() as Body).message);
    }
    return { ...first, message: lines.join("\n") };
  }
}

/** Create a logger. `debug` lines go to stderr only when `C2C_BRIDGE_DEBUG` is set. */
export function createLogger(client: HostClient | undefined): Logger {
  let ready = false;
  const backlog: Array<[Level, string, Record<string, unknown> | undefined]> = [];
  const debug = Boolean(process.env.C2C_BRIDGE_DEBUG);
  const host = new HostLog(client);
  const send = (level: Level, message: string, extra?: Record<string, unknown>) => host.push(level, message, extra);
  return {
    log(level, message, extra) {
      if (level !== "debug" || debug) {
        try {
          process.stderr.write(`[${SERVICE}] ${level}: ${message}\n`);
        } catch {
          // ignore
        }
      }
      if (ready) send(level, message, extra);
      else if (backlog.length < 100) backlog.push([level, message, extra]);
    },
    hostLog(level, message) {
      if (ready) send(level, message);
      else if (backlog.length < 100) backlog.push([level, message, undefined]);
    },
    ready() {
      ready = true;
      for (const [l, m, e] of backlog.splice(0)) send(l, m, e);
    },
  };
}

/**
 * Wrap a hook so that it never throws into the host (the `event` hook is not awaited by
 * OpenCode, so an exception there would be an unhandled rejection).
 */
export function safe<A extends unknown[], R>(
  logger: Logger,
  name: string,
  fn: (...args: A) => Promise<R>,
): (...args: A) => Promise<R | undefined> {
  return async (...args: A) => {
    try {
      return await fn(...args);
    } catch (err) {
      logger.log("error", `${name} failed: ${err instanceof Error ? err.message : String(err)}`);
      return undefined;
    }
  };
}

/**
 * Forward the native core's diagnostics (`tracing`, enabled by `C2C_BRIDGE_LOG` in env-filter
 * syntax, e.g. `debug` or `c2c_bridge::store=trace`; README "Troubleshooting") to OpenCode's
 * log through `logger` instead of stderr. Off when the variable is unset: nothing is installed.
 * `ERROR`/`WARN` lines keep their level; the others are logged as `info` so that OpenCode's
 * default log level shows them (the line itself names its level). Process-wide: the addon has
 * one sink, the last instance to call this wins. Never throws.
 */
export function forwardDiagnostics(
  addon: Pick<Addon, "initDiagnostics" | "setDiagnosticsSink">,
  logger: Logger,
  env: Record<string, string | undefined> = process.env,
): void {
  const filter = env.C2C_BRIDGE_LOG;
  if (filter === undefined) return;
  try {
    if (!addon.initDiagnostics(filter)) return;
    addon.setDiagnosticsSink((line) => {
      const level = /^\S+\s+(ERROR|WARN)\s/.exec(line)?.[1];
      logger.hostLog(level === "ERROR" ? "error" : level === "WARN" ? "warn" : "info", line);
    });
  } catch (err) {
    logger.log("warn", `C2C_BRIDGE_LOG ignored: ${err instanceof Error ? err.message : String(err)}`);
  }
}
