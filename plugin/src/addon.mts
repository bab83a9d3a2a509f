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
 * Load the addon through the package's napi-rs loader (`index.js` at the package root),
 * with `createRequire` so it works in Bun (OpenCode CLI) and Node (OpenCode Desktop).
 */
export function loadAddon(): AddonLoad {
  try {
    const require = createRequire(import.meta.url);
    const addon = require("../../index.js") as Addon;
    if (typeof addon?.Broker?.open !== "function") {
      return { ok: false, error: "the addon loaded but has no Broker export (stale or foreign index.js)" };
    }
    return { ok: true, addon };
  } catch (err) {
    const message = err instanceof Error ? err.message : String(err);
    return { ok: false, error: message.split("\n")[0] ?? message };
  }
}
