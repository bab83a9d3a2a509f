/**
 * Logging for the plugin: every line goes to stderr at once and to OpenCode's log through
 * `client.app.log`, which is only called once the plugin function has returned (calling the
 * server's own API earlier deadlocks the first request — OpenCode 1.18.33).
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

/** Create a logger. `debug` lines go to stderr only when `C2C_BRIDGE_DEBUG` is set. */
export function createLogger(client: HostClient | undefined): Logger {
  let ready = false;
  const backlog: Array<[Level, string, Record<string, unknown> | undefined]> = [];
  const debug = Boolean(process.env.C2C_BRIDGE_DEBUG);
  const send = (level: Level, message: string, extra?: Record<string, unknown>) => {
    try {
      void client?.app
        ?.log({ body: { service: SERVICE, level, message, ...(extra ? { extra } : {}) } })
        ?.catch?.(() => {});
    } catch {
      // logging must never throw
    }
  };
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
