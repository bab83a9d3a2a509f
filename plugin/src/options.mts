/**
 * Plugin options (`"plugin": [["c2c-bridge", {...}]]`) and their environment overrides.
 * Only names and types are handled here; the meaning of modes is decided in Rust.
 */

/** Options after reading the plugin options and the environment. */
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
  /** Inbound policy `accept`|`auto`|`hold`|`refuse` (validated in Rust; `C2C_BRIDGE_INBOUND` wins there). */
  inbound?: string;
  /** Held-inbox capacity, messages. Default 100. */
  heldCap?: number;
  /** Seconds a held message waits before it expires. Default 300. */
  heldTtlSecs?: number;
  /** Rate limit burst per sender→recipient. Default 20. */
  rateBurst?: number;
  /** Seconds over which the rate-limit burst refills. Default 60. */
  rateWindowSecs?: number;
  /**
   * `peerPermissions` as written (`allow` | `ask` | `deny`); validated, and overridden by
   * `C2C_BRIDGE_PEER_PERMISSIONS`, in Rust (`PermissionGate`). Default `allow`.
   */
  peerPermissions?: string;
  /** Fallback delivery check interval, milliseconds (for when `session.idle` never comes). Default 2000. */
  fallbackIntervalMs: number;
  /** First retry delay after a failed injection, milliseconds (doubles up to 30 s). Default 500. */
  retryBaseMs: number;
}

function str(v: unknown): string | undefined {
  return typeof v === "string" && v.trim() !== "" ? v.trim() : undefined;
}

function list(v: string | undefined): string[] | undefined {
  if (v === undefined || v.trim() === "") return undefined;
  return v.split(",").map((x) => x.trim()).filter(Boolean);
}

function num(v: unknown): number | undefined {
  const n = typeof v === "string" ? Number(v) : v;
  return typeof n === "number" && Number.isFinite(n) && n > 0 ? n : undefined;
}

/**
 * Read options; environment variables win over plugin options:
 * `C2C_BRIDGE_ALIAS`, `C2C_MCP_BROKER_ROOT` (c2c's own), `C2C_BRIDGE_MAX_MESSAGE_BYTES`.
 */
export function readOptions(raw: Record<string, unknown> | undefined, env: NodeJS.ProcessEnv): BridgeOptions {
  const o = raw ?? {};
  return {
    alias: str(env.C2C_BRIDGE_ALIAS) ?? str(o.alias),
    brokerRoot: str(env.C2C_MCP_BROKER_ROOT) ?? str(o.brokerRoot),
    maxMessageBytes: num(env.C2C_BRIDGE_MAX_MESSAGE_BYTES) ?? num(o.maxMessageBytes),
    supervisors: list(env.C2C_SUPERVISORS) ?? (Array.isArray(o.supervisors) ? o.supervisors.filter((x): x is string => typeof x === "string" && x.trim() !== "").map((x) => x.trim()) : []),
    inbound: str(o.inbound),
    heldCap: num(o.heldCap),
    heldTtlSecs: num(o.heldTtlSecs),
    rateBurst: num(o.rateBurst),
    rateWindowSecs: num(o.rateWindowSecs),
    peerPermissions: typeof o.peerPermissions === "string" ? o.peerPermissions : undefined,
    fallbackIntervalMs: num(o.fallbackIntervalMs) ?? 2000,
    retryBaseMs: num(o.retryBaseMs) ?? 500,
  };
}
