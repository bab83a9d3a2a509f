/**
 * The permission handler: carries `permission.asked` / `permission.v2.asked` events to the
 * Rust gate and its decision back to OpenCode. It decides nothing itself.
 *
 * - Only requests of this instance's sessions are handled: the request's session must be a
 *   root session registered with the broker, or a `task` child of one (`owns`). Others are
 *   ignored without a reply and without a log line.
 * - The gate may ask for data it lacks (`need-message`, `need-session`); the handler fetches
 *   it through the client (read-only calls), feeds it and asks again. A failed fetch feeds
 *   nothing; the gate then resolves towards "no reply".
 * - `once` / `reject` go out through the {@link Reply} capability; `leave` sends nothing
 *   (OpenCode's own prompt decides); `duplicate` means the id was decided before.
 *
 * OpenCode 1.18.33 never calls the `permission.ask` hook, so events are the only way in.
 */
import type { HostEvent } from "../host.mjs";
import type { History } from "../history.mjs";
import type { PermissionDecision } from "../../../index.js";
import type { Addon } from "../addon.mjs";
import type { PermissionKind, Reply } from "./reply.mjs";

/** The gate's answer: the addon's `PermissionDecision` (generated index.d.ts). */
export type GateDecision = PermissionDecision;

/** What the handler needs of the addon's `PermissionGate` (generated index.d.ts). */
export type Gate = Pick<InstanceType<Addon["PermissionGate"]>, "decide" | "feedMessage" | "feedSession">;

/** Dependencies of {@link PermissionHandler}. */
export interface PermissionHandlerDeps {
  gate: Gate;
  /** Read-only fetches (`session.message`, `session.get`, `session.messages`). */
  history: History;
  reply: Reply;
  /** Whether `sessionId` is one of this instance's registered root sessions or their children. */
  owns(sessionId: string): Promise<boolean>;
  /**
   * Called after a request was left to OpenCode's prompt (never after a reply), with the
   * request payload: where supervisors are told about it. Errors are logged, never raised.
   */
  onLeft?(kind: PermissionKind, decision: GateDecision, request: Record<string, unknown>): Promise<void>;
  log(level: "debug" | "info" | "warn" | "error", message: string): void;
}

/** The most need-* rounds per request (each item is asked for at most once by the gate). */
const MAX_ROUNDS = 16;

/**
 * The permission request events of OpenCode 1.18.33, with the gate's kind for each:
 * `permission.asked` (classic) and `permission.v2.asked`. (The plugin's event decoder,
 * events.mts, routes them here by this function.)
 */
export function permissionKind(type: string): PermissionKind | undefined {
  if (type === "permission.asked") return "asked";
  if (type === "permission.v2.asked") return "v2";
  return undefined;
}

/** Handles permission events for one plugin instance. */
export class PermissionHandler {
  constructor(private readonly deps: PermissionHandlerDeps) {}

  /**
   * Handle one event. Resolves with the final decision, or undefined when the event is not a
   * permission request of this instance. Never throws.
   */
  async handle(event: HostEvent): Promise<GateDecision | undefined> {
    const kind = permissionKind(event.type);
    if (!kind) return undefined;
    const request = event.properties ?? {};
    const sessionId = typeof request.sessionID === "string" ? request.sessionID : "";
    const id = typeof request.id === "string" ? request.id : "";
    if (!sessionId || !id) return undefined;
    try {
      if (!(await this.deps.owns(sessionId))) {
        this.deps.log("debug", `permission ${id}: session ${sessionId} is not ours; ignored`);
        return undefined;
      }
      const decision = await this.decide(kind, request);
      await this.carryOut(kind, decision);
      if (decision.action === "leave" && this.deps.onLeft) {
        try {
          await this.deps.onLeft(kind, decision, request);
        } catch (err) {
          this.deps.log("warn", `permission ${id}: telling supervisors failed: ${err instanceof Error ? err.message : String(err)}`);
        }
      }
      return decision;
    } catch (err) {
      this.deps.log("error", `permission ${id}: ${err instanceof Error ? err.message : String(err)}`);
      return undefined;
    }
  }

  private async decide(kind: PermissionKind, request: Record<string, unknown>): Promise<GateDecision> {
    const { gate } = this.deps;
    let d = gate.decide(kind, request);
    for (let round = 0; round < MAX_ROUNDS; round++) {
      if (d.action === "need-message" && d.messageId) {
        const m = await this.deps.history.message(d.sessionId, d.messageId);
        if (m) gate.feedMessage(m);
      } else if (d.action === "need-session") {
        const [session, messages] = await Promise.all([this.deps.history.session(d.sessionId), this.deps.history.messages(d.sessionId)]);
        gate.feedSession(session, messages);
      } else {
        return d;
      }
      d = gate.decide(kind, request);
    }
    // The gate bounds its own questions; reaching this means a bug. Send nothing.
    this.deps.log("warn", `permission ${d.requestId}: no final decision after ${MAX_ROUNDS} rounds; left to the prompt`);
    return { ...d, action: "leave", reason: "no-final-decision" };
  }

  private async carryOut(kind: PermissionKind, d: GateDecision): Promise<void> {
    const what = `permission ${d.requestId} (${kind}) in ${d.sessionId}`;
    switch (d.action) {
      case "once":
      case "reject":
        try {
          await this.deps.reply(kind, d.sessionId, d.requestId, d.action);
          this.deps.log("info", `${what}: replied ${d.action} (${d.reason}${d.from ? `, from peer ${d.from}` : ""})`);
        } catch (err) {
          // The decision stays recorded; the request keeps OpenCode's own prompt.
          this.deps.log("warn", `${what}: reply ${d.action} failed: ${err instanceof Error ? err.message : String(err)}`);
        }
        return;
      case "leave":
        this.deps.log(
          d.reason === "local-turn" ? "debug" : "info",
          `${what}: left to the prompt (${d.reason}${d.category ? `: ${d.guardrailReason ?? d.category}` : ""})`,
        );
        return;
      default:
        return;
    }
  }
}
