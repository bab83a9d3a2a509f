/**
 * Loading the native addon. A missing, corrupt or wrong-platform `.node` must not take
 * OpenCode down: `loadAddon` never throws, it returns the error for the plugin to report.
 */
import { createRequire } from "node:module";
import type * as Native from "../../index.js";

/** The addon's exports (generated `index.d.ts`). */
export type Addon = typeof Native;

/** Result of {@link loadAddon}. */
export type AddonLoad = { ok: true; addon: Addon } | { ok: false; error: string };

/**
 * Load the addon through the package's entry point (`binding.js` at the package root: napi-rs's
 * loader `index.js`, whose failure it turns into one error naming the platform and the package
 * `c2c-bridge-<platform>` that should provide the binary), with `createRequire` so it works in
 * Bun (OpenCode CLI) and Node (OpenCode Desktop).
 */
export function loadAddon(): AddonLoad {
  try {
    const require = createRequire(import.meta.url);
    const addon = require("../../binding.js") as Addon;
    if (typeof addon?.Broker?.open !== "function") {
      return { ok: false, error: "the addon loaded but has no Broker export (stale or foreign index.js)" };
    }
    return { ok: true, addon };
  } catch (err) {
    return { ok: false, error: describeLoadError(err) };
  }
}

/**
 * `binding.js` throws one error whose message is the whole report (`code` `C2C_BINARY_MISSING`,
 * `C2C_BINARY_BROKEN` or `C2C_PLATFORM_UNSUPPORTED`): it is returned as is. Anything else, e.g.
 * napi-rs's loader required directly, throws a generic "Cannot find native binding" and keeps
 * the real reasons (missing file, `invalid ELF header`, wrong platform) in the `cause` chain:
 * report the first line of each, the one naming the `.node` file first.
 */
export function describeLoadError(err: unknown): string {
  const code = (err as { code?: unknown } | null)?.code;
  if (err instanceof Error && typeof code === "string" && code.startsWith("C2C_")) return err.message;
  const lines: string[] = [];
  let e: unknown = err;
  for (let depth = 0; e && depth < 8; depth++) {
    const msg = e instanceof Error ? e.message : String(e);
    const first = msg.split("\n")[0]?.trim();
    if (first && !lines.includes(first)) lines.push(first);
    e = e instanceof Error ? (e as Error & { cause?: unknown }).cause : undefined;
  }
  const specific = lines.filter((l) => l.includes(".node"));
  const ordered = [...specific, ...lines.filter((l) => !specific.includes(l))];
  return ordered.join("; ") || "unknown error";
}
