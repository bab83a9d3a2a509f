/**
 * The active local modes, as `/peers` shows them to the user. Values come from the Rust
 * gate (which resolved option + environment); this module only formats them.
 */

/** The modes of one plugin instance. */
export interface Modes {
  /** `allow` | `ask` | `deny`, or undefined when the gate could not be built. */
  peerPermissions?: string;
  /** Where it came from: `default` | `option` | `env`. */
  peerPermissionsSource?: string;
  /** Why permission handling is off, when it is. */
  permissionsDisabled?: string;
  /** Inbound gating in force (`accept` | `auto` | `hold` | `refuse`), from the session's broker. */
  inbound?: string;
  /** Where inbound came from. */
  inboundSource?: string;
  /** Configuration mistakes, one line each (issue 18). */
  configErrors?: string[];
  /** Auto-answers are off because of a configuration mistake. */
  autoAnswersOff?: boolean;
  /** The broker root in use and why (`resolveRoot`'s `path` and `reason`). */
  root?: { path: string; reason: string };
}

/** One line per mode, for `/peers`. */
export function describeModes(m: Modes): string {
  const lines = ["c2c-bridge modes:"];
  if (m.autoAnswersOff) {
    lines.push("- peerPermissions: off — auto-answers are OFF because of a configuration error: every permission request goes to OpenCode's prompt until it is fixed");
  } else if (m.peerPermissions) {
    lines.push(`- peerPermissions: ${m.peerPermissions} (${m.peerPermissionsSource ?? "default"})`);
  } else {
    lines.push(`- peerPermissions: off — no permission request is answered (${m.permissionsDisabled ?? "unavailable"})`);
  }
  lines.push(`- inbound: ${m.inbound ?? "unknown (session not registered)"}${m.inboundSource ? ` (${m.inboundSource})` : ""}`);
  if (m.root) lines.push(`- broker root: ${m.root.path} — ${m.root.reason}`);
  for (const e of m.configErrors ?? []) lines.push(`- configuration error: ${e}`);
  return lines.join("\n");
}
