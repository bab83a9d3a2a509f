/**
 * Plugin options (`"plugin": [["c2c-bridge", {...}]]`) and their environment overrides.
 * Validation and defaults are Rust's (`validateOptions`, one table of every option in
 * `src/config/mod.rs`); this module only maps its answer onto the shape the plugin uses and
 * reports the mistakes (issue 18: a mistake is never silently read as "not set").
 */
import type { ValidatedOptions } from "../../index.js";
import type { Addon } from "./addon.mjs";
import type { HostClient } from "./host.mjs";
import type { Logger } from "./log.mjs";

/** Options after validation (only values that passed; environment overrides applied). */
export interface BridgeOptions {
  /** Alias for this instance's root sessions (later ones get `-2`, `-3`, …). Default: `<dir basename>-<4 hex>`. */
  alias?: string;
  /** Broker root directory. Default: c2c's resolution (`C2C_MCP_BROKER_ROOT`, XDG state, `~/.c2c`). */
  brokerRoot?: string;
  /**
   * Supervisor aliases told about permission requests left to OpenCode's prompt (advisory
   * only: their replies are shown, never acted on). `C2C_SUPERVISORS` (comma list) wins.
   */
  supervisors: string[];
  /** Maximum message size, bytes of UTF-8. Default 16384. */
  maxMessageBytes?: number;
  /** Inbound policy `accept`|`auto`|`hold`|`refuse` (`hold` when the value given was wrong). */
  inbound?: string;
  /** Held-inbox capacity, messages. Default 100. */
  heldCap?: number;
  /** Seconds a held message waits before it expires. Default 300. */
  heldTtlSecs?: number;
  /** Rate limit burst per sender→recipient. Default 20. */
  rateBurst?: number;
  /** Seconds over which the rate-limit burst refills. Default 60. */
  rateWindowSecs?: number;
  /** `peerPermissions` (`allow` | `ask` | `deny`), already validated. Default `allow`. */
  peerPermissions?: string;
  /** Fallback delivery check interval, milliseconds (for when `session.idle` never comes). Default 2000. */
  fallbackIntervalMs: number;
  /** First retry delay after a failed injection, milliseconds (doubles up to 30 s). Default 500. */
  retryBaseMs: number;
}

/** One configuration mistake, as Rust reports it (the addon's `OptionError`). */
export type { OptionError } from "../../index.js";

/**
 * What validation found, besides the values (the addon's `ValidatedOptions` without them):
 * `errors`, `autoAnswersOff` (no permission request is answered until fixed), `fromEnv`.
 */
export type OptionsReport = Omit<ValidatedOptions, "options">;

/** The process environment as plain strings (under Bun, native code must be handed it). */
export function plainEnv(env: NodeJS.ProcessEnv): Record<string, string> {
  return Object.fromEntries(Object.entries(env).filter((e): e is [string, string] => typeof e[1] === "string"));
}

/**
 * Validate the raw options and the environment (`C2C_BRIDGE_ALIAS`, `C2C_MCP_BROKER_ROOT`,
 * `C2C_SUPERVISORS`, `C2C_BRIDGE_MAX_MESSAGE_BYTES`, `C2C_BRIDGE_INBOUND`,
 * `C2C_BRIDGE_PEER_PERMISSIONS`; the environment wins) in Rust.
 */
export function readOptions(
  addon: Addon,
  raw: unknown,
  env: NodeJS.ProcessEnv,
): { options: BridgeOptions; report: OptionsReport } {
  const v = addon.validateOptions(raw ?? null, plainEnv(env));
  // Rust validated every value and filled the plugin's own defaults: forwarded as is.
  return {
    options: v.options,
    report: { errors: v.errors, autoAnswersOff: v.autoAnswersOff, fromEnv: v.fromEnv },
  };
}

/** The one-line summary of the mistakes, or undefined when there are none. */
export function describeOptionErrors(report: OptionsReport): string | undefined {
  if (report.errors.length === 0) return undefined;
  const list = report.errors.map((e) => `${e.code} ${e.message}`).join("; ");
  const effect = report.autoAnswersOff
    ? "auto-answers are OFF: every permission request goes to OpenCode's prompt until this is fixed"
    : "the defaults apply to these options until this is fixed";
  return `configuration error in the c2c-bridge options: ${list} — ${effect}`;
}

/**
 * Report the mistakes once per plugin instance: one `error` log line and one toast. Call it
 * after the plugin function has returned (the toast calls the server's own API).
 */
export function reportOptionErrors(report: OptionsReport, logger: Logger, client: HostClient | undefined): void {
  const text = describeOptionErrors(report);
  if (!text) return;
  logger.log("error", text);
  try {
    void client?.tui
      ?.showToast?.({ body: { title: "c2c-bridge configuration", message: text, variant: "error" } })
      ?.catch?.(() => {});
  } catch {
    // a toast must never throw
  }
}
