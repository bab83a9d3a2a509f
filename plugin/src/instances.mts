/**
 * One serving plugin instance per project directory per process.
 *
 * OpenCode 1.18.33 loads the package twice in one process when the global and the project
 * config name it with different specs (e.g. the npm name and a `file://` path): two plugin
 * instances for one directory, each with its own options. Both serving it would inject every
 * peer message twice, and the more open options (a global default `peerPermissions: allow`)
 * would answer requests the project set to `ask`.
 *
 * So the instances of one directory meet in a process-wide table (keyed on `globalThis` with a
 * registered symbol, so every copy of the package sees the same one): the newest instance
 * serves, with, for each policy setting, the strictest value any of them was given (decided in
 * Rust: `strictestSetting`); earlier ones are retired (their sessions are handed over) and
 * their hooks do nothing, except tools, which run on the serving instance.
 */
import type { ToolDef } from "./host.mjs";

/** What a claim knows about one loaded copy of the plugin. */
export interface ClaimInfo {
  /** Where this copy of the package was loaded from (its directory), as its "spec". */
  spec: string;
  /** The raw plugin options this copy was given. */
  options: Record<string, unknown>;
}

/** A running instance as the table sees it. */
export interface Served {
  /** Its tools (a retired instance's tools run these). */
  tools?: Record<string, ToolDef>;
  /** Stop serving: stop delivery and close the instance's handles; returns the sessions it had. */
  retire(): string[];
  /** Take over these sessions from a retired instance. */
  adopt(sessionIds: string[]): void;
}

interface Slot {
  claims: Array<ClaimInfo & { served?: Served }>;
  active?: Served;
}

const KEY = Symbol.for("c2c-bridge.instances.v1");

function table(): Map<string, Slot> {
  const g = globalThis as unknown as Record<symbol, Map<string, Slot> | undefined>;
  let t = g[KEY];
  if (!t) {
    t = new Map();
    g[KEY] = t;
  }
  return t;
}

/** One instance's place in the table. */
export interface Claim {
  /** The other copies already loaded for this directory (empty when this one is alone). */
  readonly others: ClaimInfo[];
  /** Every claim's options (this one's last), for merging. */
  readonly allOptions: Array<Record<string, unknown>>;
  /** Make `served` the serving instance: retires the previous one and hands its sessions over. */
  activate(served: Served): void;
  /** Whether `served` (this claim's instance) is the one serving the directory. */
  isActive(): boolean;
  /** The serving instance, if any. */
  active(): Served | undefined;
  /** Leave the table (dispose). */
  release(): void;
}

/** Enter the table for `directory` (canonical). */
export function claimDirectory(directory: string, info: ClaimInfo): Claim {
  const t = table();
  let slot = t.get(directory);
  if (!slot) {
    slot = { claims: [] };
    t.set(directory, slot);
  }
  const s = slot;
  const others = s.claims.map((c) => ({ spec: c.spec, options: c.options }));
  const mine: ClaimInfo & { served?: Served } = { ...info };
  s.claims.push(mine);
  return {
    others,
    allOptions: s.claims.map((c) => c.options),
    activate(served) {
      mine.served = served;
      const prev = s.active;
      s.active = served;
      if (prev && prev !== served) served.adopt(prev.retire());
    },
    isActive: () => mine.served !== undefined && s.active === mine.served,
    active: () => s.active,
    release() {
      const i = s.claims.indexOf(mine);
      if (i >= 0) s.claims.splice(i, 1);
      if (s.active === mine.served) s.active = undefined;
      if (s.claims.length === 0 && t.get(directory) === s) t.delete(directory);
    },
  };
}
