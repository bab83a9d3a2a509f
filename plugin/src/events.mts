/**
 * The plugin's one decoder of OpenCode 1.18.33 events: a raw `{type, properties}` from the
 * `event` hook becomes one typed {@link HostFact}, and the busy rule for a session status
 * lives here only ({@link isBusyStatus}), for events and for `GET /session/status` alike.
 * `index.mts` switches on the fact; nothing else in the plugin reads event JSON.
 *
 * (The Rust core decodes the same events for its turn index, `PermissionGate.observe`: what
 * it needs is handed over raw and decoded there.)
 */
import type { HostEvent, HostMessage, HostPart, HostSession } from "./host.mjs";
import { permissionKind } from "./permissions/handler.mjs";
import type { PermissionKind } from "./permissions/reply.mjs";

/** What one OpenCode event means to the plugin. */
export type HostFact =
  /** `session.created` (`created`) or `session.updated`: a session exists, maybe a child. */
  | { kind: "session"; info: HostSession; created: boolean }
  /** `session.deleted`: the session ended for good. */
  | { kind: "session-deleted"; sessionId: string }
  /**
   * `session.status` or `session.idle`: whether the session runs a turn now. `busy: false`
   * means the turn ended (the delivery point).
   */
  | { kind: "status"; sessionId: string; busy: boolean }
  /** `message.part.updated` for a part we injected: the peer message is stored. */
  | { kind: "peer-part-stored"; sessionId: string; peerMessageId: string; messageId: string }
  /**
   * `message.updated` of a user message (typed, or our injection): a new one may start a turn
   * (the busy mark, `Sessions.turnStarting`; a repeat of a known id is an update).
   */
  | { kind: "user-message"; sessionId: string; messageId: string }
  /** `message.updated` of an assistant message answering `parentId`. */
  | { kind: "answer"; sessionId: string; parentId: string; completed: boolean; failed: boolean }
  /** `session.error` with `MessageAbortedError`: the user stopped the turn (Esc). */
  | { kind: "aborted"; sessionId: string }
  /** `permission.asked` / `permission.v2.asked`: for the permission handler, raw. */
  | { kind: "permission"; permission: PermissionKind; event: HostEvent }
  /** Anything else, or an event missing the fields its kind needs. */
  | { kind: "other" };

/**
 * Whether a session status `type` (`session.status` events, `GET /session/status` values)
 * means a turn is running. OpenCode 1.18.33 has `idle`, `busy` and `retry` (a failed model
 * call that will be retried: still in the turn); busy is `busy` or `retry`, as the Rust core
 * reads it. A type this version does not know counts as busy, the safe side for delivery
 * (nothing is injected until a known idle comes).
 */
export function isBusyStatus(type: string): boolean {
  // `busy`, `retry`: in a turn. Anything but `idle` that this version does not know: also
  // busy (hold delivery). The same rule as Rust's `opencode::is_busy_status` (`sessionBusy`).
  return type !== "idle";
}

/**
 * A session's busy state from `GET /session/status` (`{[sessionID]: {type}}`; OpenCode
 * leaves idle sessions out): `undefined` when there is no map (the call failed).
 */
export function busyInStatusMap(map: Record<string, { type?: unknown } | undefined> | undefined, sessionId: string): boolean | undefined {
  if (!map) return undefined;
  const type = map[sessionId]?.type;
  return typeof type === "string" ? isBusyStatus(type) : false;
}

/** The peer-message id our injection put in a part's `metadata.peerMessage`, if any. */
export function peerMessageIdOf(part: { metadata?: unknown } | undefined | null): string | undefined {
  const pm = (part?.metadata as { peerMessage?: { messageId?: unknown } } | undefined)?.peerMessage;
  return typeof pm?.messageId === "string" ? pm.messageId : undefined;
}

/** Whether a part carries our `peerMessage` mark at all (an injected peer message). */
export function isPeerPart(part: { metadata?: unknown } | undefined | null): boolean {
  return Boolean((part?.metadata as { peerMessage?: unknown } | undefined)?.peerMessage);
}

export { permissionKind };

const str = (v: unknown): string | undefined => (typeof v === "string" && v !== "" ? v : undefined);

/** Decode one event. Never throws; unknown or malformed events are `{kind: "other"}`. */
export function decodeEvent(event: HostEvent): HostFact {
  const type = event?.type;
  if (typeof type !== "string") return { kind: "other" };
  const permission = permissionKind(type);
  if (permission) return { kind: "permission", permission, event };
  const p = (event.properties ?? {}) as Record<string, unknown>;
  switch (type) {
    case "session.created":
    case "session.updated": {
      const info = p.info as HostSession | undefined;
      return info?.id ? { kind: "session", info, created: type === "session.created" } : { kind: "other" };
    }
    case "session.deleted": {
      const id = str((p.info as HostSession | undefined)?.id);
      return id ? { kind: "session-deleted", sessionId: id } : { kind: "other" };
    }
    case "session.status": {
      const sid = str(p.sessionID);
      const st = str((p.status as { type?: unknown } | undefined)?.type);
      return sid && st ? { kind: "status", sessionId: sid, busy: isBusyStatus(st) } : { kind: "other" };
    }
    case "session.idle": {
      const sid = str(p.sessionID);
      return sid ? { kind: "status", sessionId: sid, busy: false } : { kind: "other" };
    }
    case "message.part.updated": {
      // "Delivered" means stored: the part we injected, now persisted in the session.
      const part = p.part as HostPart | undefined;
      const id = peerMessageIdOf(part);
      return part?.sessionID && id
        ? { kind: "peer-part-stored", sessionId: part.sessionID, peerMessageId: id, messageId: part.messageID }
        : { kind: "other" };
    }
    case "message.updated": {
      const info = p.info as HostMessage | undefined;
      if (info?.role === "user") {
        const sid = str(info.sessionID);
        const id = str(info.id);
        return sid && id ? { kind: "user-message", sessionId: sid, messageId: id } : { kind: "other" };
      }
      if (info?.role !== "assistant" || !info.parentID) return { kind: "other" };
      return {
        kind: "answer",
        sessionId: info.sessionID,
        parentId: info.parentID,
        completed: typeof info.time?.completed === "number",
        failed: info.error?.name === "MessageAbortedError",
      };
    }
    case "session.error": {
      // `POST /session/:id/abort` (Esc in the TUI) publishes session.error with
      // MessageAbortedError before session.idle (OpenCode 1.18.33).
      const sid = str(p.sessionID);
      const name = (p.error as { name?: unknown } | undefined)?.name;
      return sid && name === "MessageAbortedError" ? { kind: "aborted", sessionId: sid } : { kind: "other" };
    }
    default:
      return { kind: "other" };
  }
}
