/**
 * The reply capability: the only code in the plugin that answers an OpenCode permission
 * request. Only the permission handler receives it; the delivery path never imports this
 * module (B098 "bus, never RPC", checked by a test over the import graph).
 *
 * Its type can express only `once` and `reject`. Why never `always`: OpenCode 1.18.33 turns
 * `always` into allow rules that outlive the turn and widen what every later turn, the
 * user's included, may do without a prompt. A peer-triggered turn gets at most this one call.
 *
 * Endpoints (OpenCode 1.18.33):
 * - `permission.asked` (classic loop): `client.postSessionIdPermissionsPermissionId(
 *   {path:{id: sessionID, permissionID}, body:{response}})`, i.e. `POST
 *   /session/:id/permissions/:permissionID`. Called as a method (it reads `this._client`).
 * - `permission.v2.asked` (newer runtime): `POST /api/session/:sessionID/permission/:requestID/reply
 *   {reply}` (204). The v1 SDK has no method for it, so it goes through the SDK's own HTTP
 *   client (`client._client.post`), which carries the instance directory header and the
 *   in-process fetch; `serverUrl` + global `fetch` is the fallback when that is absent.
 */
import type { HostClient } from "../host.mjs";

/** The only reply words the plugin can send. */
export type ReplyWord = "once" | "reject";

/** Which event raised the request. */
export type PermissionKind = "asked" | "v2";

/** Answer one request. Rejects when OpenCode refused the reply (e.g. 404: already answered). */
export type Reply = (kind: PermissionKind, sessionId: string, requestId: string, word: ReplyWord) => Promise<void>;

function describe(error: unknown): string {
  if (error === undefined || error === null) return "";
  const s = typeof error === "object" ? JSON.stringify(error) : String(error);
  return s.slice(0, 300);
}

function checkWord(word: string): ReplyWord {
  // A runtime check as well as the type: nothing but these two words may leave this module.
  if (word !== "once" && word !== "reject") throw new Error(`refusing to send permission reply ${JSON.stringify(word)}`);
  return word;
}

/** Build the reply capability over the plugin's client. */
export function makeReply(client: HostClient, serverUrl?: URL, directory?: string): Reply {
  return async (kind, sessionId, requestId, rawWord) => {
    const word = checkWord(rawWord);
    if (kind === "asked") {
      if (typeof client.postSessionIdPermissionsPermissionId !== "function") {
        throw new Error("this OpenCode client has no postSessionIdPermissionsPermissionId");
      }
      const res = await client.postSessionIdPermissionsPermissionId({
        path: { id: sessionId, permissionID: requestId },
        body: { response: word },
      });
      if (res?.error) throw new Error(`permission reply rejected: ${describe(res.error)}`);
      return;
    }
    const url = "/api/session/{sessionID}/permission/{requestID}/reply";
    if (client._client && typeof client._client.post === "function") {
      const res = await client._client.post({
        url,
        path: { sessionID: sessionId, requestID: requestId },
        body: { reply: word },
        headers: { "Content-Type": "application/json" },
      });
      if (res?.error) throw new Error(`v2 permission reply rejected: ${describe(res.error)}`);
      return;
    }
    if (!serverUrl) throw new Error("no way to reach the v2 permission endpoint (no SDK client, no serverUrl)");
    const target = new URL(
      `/api/session/${encodeURIComponent(sessionId)}/permission/${encodeURIComponent(requestId)}/reply`,
      serverUrl,
    );
    if (directory) target.searchParams.set("directory", directory);
    const res = await fetch(target, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ reply: word }),
    });
    if (!res.ok) throw new Error(`v2 permission reply answered HTTP ${res.status}`);
  };
}
