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
  /**
   * Inbound gating (`accept` | `auto` | `hold` | `refuse`): implemented by the inbound-policy
   * issue; until then every message is delivered (`accept`) and this stays undefined.
   */
  inbound?: string;
  /** Where inbound came from. */
  inboundSource?: string;
}

/** One line per mode, for `/peers`. */
export function describeModes(m: Modes): string {
  const lines = ["c2c-bridge modes:"];
  if (m.peerPermissions) {
    lines.push(`- peerPermissions: ${m.peerPermissions} (${m.peerPermissionsSource ?? "default"})`);
  } else {
    lines.push(`- peerPermissions: off — no permission request is answered (${m.permissionsDisabled ?? "unavailable"})`);
  }
  lines.push(m.inbound ? `- inbound: ${m.inbound} (${m.inboundSource ?? "default"})` : "- inbound: accept (not configurable yet)");
  return lines.join("\n");
}
