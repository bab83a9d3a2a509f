/**
 * Read-only history fetches for the Rust turn index: one message (info + parts), one session,
 * a session's messages. Used by the permission handler and by `peer_send`'s `via` lookup
 * when the index lacks data. Every failure reads as "nothing": the index then resolves the
 * turn as local (no auto-approval, a fresh hop chain).
 */
import type { Addon } from "./addon.mjs";
import type { HostClient, HostMessageWithParts } from "./host.mjs";

/** The three reads. */
export interface History {
  message(sessionId: string, messageId: string): Promise<HostMessageWithParts | undefined>;
  session(sessionId: string): Promise<object | null>;
  messages(sessionId: string): Promise<object[] | null>;
}

/** Build the reads over the SDK client. */
export function makeHistory(client: HostClient): History {
  return {
    async message(sessionId, messageId) {
      try {
        const fn = (client.session as { message?: (o: object) => Promise<{ data?: HostMessageWithParts }> }).message;
        if (typeof fn !== "function") return undefined;
        const res = await fn.call(client.session, { path: { id: sessionId, messageID: messageId } });
        return res?.data?.info ? res.data : undefined;
      } catch {
        return undefined;
      }
    },
    async session(sessionId) {
      try {
        const res = await client.session.get({ path: { id: sessionId } });
        return res?.data?.id ? res.data : null;
      } catch {
        return null;
      }
    },
    async messages(sessionId) {
      try {
        const res = await client.session.messages({ path: { id: sessionId } });
        return Array.isArray(res?.data) && !res.error ? res.data : null;
      } catch {
        return null;
      }
    },
  };
}

/** What `viaFor` needs of the addon's `PermissionGate` (the per-instance turn index; generated index.d.ts). */
export type ViaIndex = Pick<InstanceType<Addon["PermissionGate"]>, "outgoingVia" | "feedMessage" | "feedSession">;

/**
 * The hop chain a `peer_send` from the tool call in assistant message `messageId` continues:
 * the triggering peer message's `via` for a peer-triggered turn (so A→B→C→A loops of fresh
 * messages hit the hop limit), `[]` for a turn the user typed. Decided in Rust.
 *
 * The turn index has seen OpenCode's events, so the answer is normally ready at once: then
 * it is returned synchronously (no round trip to OpenCode, no await that would let other
 * work run first). Only data the index lacks (a session from before the plugin started, a
 * message it never saw) is fetched, and then a promise is returned.
 */
export function viaFor(index: ViaIndex, history: History, sessionId: string, messageId: string): string[] | Promise<string[]> {
  const first = index.outgoingVia(sessionId, messageId);
  if (first.action === "ready") return first.via;
  return viaWithFetches(index, history, sessionId, messageId, first);
}

async function viaWithFetches(
  index: ViaIndex,
  history: History,
  sessionId: string,
  messageId: string,
  first: ReturnType<ViaIndex["outgoingVia"]>,
): Promise<string[]> {
  let a = first;
  for (let round = 0; round < 8; round++) {
    if (round > 0) a = index.outgoingVia(sessionId, messageId);
    if (a.action === "ready") return a.via;
    if (a.action === "need-message" && a.sessionId && a.messageId) {
      const m = await history.message(a.sessionId, a.messageId);
      if (m) index.feedMessage(m);
    } else if (a.action === "need-session" && a.sessionId) {
      const [s, ms] = await Promise.all([history.session(a.sessionId), history.messages(a.sessionId)]);
      index.feedSession(s, ms);
    } else {
      break;
    }
  }
  return [];
}
