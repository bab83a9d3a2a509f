/**
 * Supervisors (c2c's M2/M4 advisory path, B098 "bus, never RPC").
 *
 * When a permission request of one of our sessions is left to OpenCode's own prompt, each
 * configured supervisor gets a DM naming the request, the tool and what it wants, and saying
 * that the decision is made in the requester's own OpenCode. A pending-reply slot records who
 * was asked, so that a reply `permission:<id>:approve-once|approve-always|reject` can be
 * checked (in Rust, at the inbound gate) for sender identity. A checked reply is only shown —
 * at once as a toast and in the log, later framed in the transcript — and never answers the
 * request: nothing here can reach a permission reply endpoint.
 */
import type { Addon } from "./addon.mjs";
import type { GateDecision } from "./permissions/handler.mjs";
import type { Deliverable } from "./delivery.mjs";

/** What this module uses of a session's `Broker` (generated index.d.ts). */
type Broker = Pick<InstanceType<Addon["Broker"]>, "alias" | "openPendingReply" | "send">;

/** A one-line, bounded summary of what a request wants (our own session's tool call). */
export function describeRequest(request: Record<string, unknown>): { tool: string; wants: string } {
  const meta = (request.metadata ?? {}) as Record<string, unknown>;
  const tool = String(request.permission ?? request.action ?? "unknown");
  const parts: string[] = [];
  if (typeof meta.command === "string") parts.push(`command: ${meta.command}`);
  if (typeof meta.filepath === "string") parts.push(`file: ${meta.filepath}`);
  const patterns = Array.isArray(request.patterns) ? request.patterns : Array.isArray(request.resources) ? request.resources : [];
  if (parts.length === 0 && patterns.length > 0) parts.push(`patterns: ${patterns.slice(0, 5).map(String).join(", ")}`);
  const wants = (parts.join("; ") || "(no details)").slice(0, 500);
  return { tool, wants };
}

/** Open the slot and DM every supervisor. Returns the aliases reached. */
export function tellSupervisors(
  broker: Broker,
  supervisors: string[],
  d: GateDecision,
  request: Record<string, unknown>,
  log: (level: "info" | "warn", message: string) => void,
): string[] {
  const others = supervisors.filter((s) => s.toLowerCase() !== broker.alias.toLowerCase());
  if (others.length === 0) return [];
  const slot = broker.openPendingReply(d.requestId, "permission", others);
  const { tool, wants } = describeRequest(request);
  const text = [
    `Permission request ${d.requestId} from ${broker.alias}: the ${tool} tool wants to run (${wants}).`,
    `The decision is made in ${broker.alias}'s own OpenCode prompt; nothing you send can approve or reject it.`,
    `You may advise by replying exactly: permission:${d.requestId}:approve-once | approve-always | reject (within ${Math.round(slot.ttlSeconds)} s).`,
  ].join("\n");
  const reached: string[] = [];
  for (const sup of others) {
    try {
      broker.send(sup, text);
      reached.push(sup);
    } catch (err) {
      const e = err as { code?: string; message?: string };
      log("warn", `supervisor ${sup} not told about ${d.requestId}: ${e.code ?? ""} ${e.message ?? String(err)}`);
    }
  }
  log("info", `permission ${d.requestId}: supervisors told (${reached.join(", ") || "none"}); the prompt decides`);
  return reached;
}

/** The toast and log line for a checked permission reply (advice for the human at the prompt). */
export function adviceText(item: Deliverable): string | undefined {
  const r = item.permissionReply;
  if (!r) return undefined;
  const mark = r.verified ? "verified supervisor" : "UNVERIFIED sender";
  return `c2c advice (${mark} ${r.fromAlias}): ${r.verdict} for permission ${r.permId}. Decide in OpenCode's prompt; this advice answers nothing.`;
}
