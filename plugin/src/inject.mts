/**
 * The inject capability: the one function the delivery path may use to reach OpenCode.
 *
 * B098 ("bus, never RPC"), structurally: the delivery module receives an {@link Inject}
 * function, never the SDK client, so nothing on the message path can reach a permission
 * reply endpoint. The reply capability lives in `permissions/reply.mts`, which no delivery
 * module imports (checked by a test over the import graph).
 */
import type { HostClient, InjectTextPart } from "./host.mjs";

/** Start a turn in `sessionId` with one text part. Rejects when OpenCode did not accept it. */
export type Inject = (sessionId: string, part: InjectTextPart) => Promise<void>;

/** Build the inject capability over `client.session.promptAsync` (204 on success). */
export function makeInject(client: HostClient): Inject {
  const promptAsync = client.session.promptAsync.bind(client.session);
  return async (sessionId, part) => {
    const res = await promptAsync({ path: { id: sessionId }, body: { parts: [part] } });
    if (res?.error) {
      const detail = typeof res.error === "object" ? JSON.stringify(res.error) : String(res.error);
      throw new Error(`promptAsync rejected: ${detail.slice(0, 300)}`);
    }
    const status = res?.response?.status;
    if (typeof status === "number" && status >= 300) {
      throw new Error(`promptAsync answered HTTP ${status}`);
    }
  };
}
