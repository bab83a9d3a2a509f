/**
 * Delivery (surfaceAdvisory): peer messages from the broker inbox into an OpenCode session.
 *
 * - One message per turn, injected only while the session is idle; while it is busy the
 *   message waits in the inbox and is flushed on idle. Why: a message injected into a busy
 *   session is folded into the running turn, which breaks provenance (opencode-host.md,
 *   busy-session hazard). A fallback timer covers a missing `session.idle`.
 * - At-least-once: a message is acknowledged (moved to the archive) only after `promptAsync`
 *   succeeded; a failed injection leaves it in the inbox and retries with backoff.
 * - Never twice: injected ids are remembered, and after a restart the session's transcript
 *   (`metadata.peerMessage.messageId` of its parts) is read once before the first injection.
 *
 * This module receives only the {@link Inject} capability; framing and the inbound policy
 * are decided in Rust (the deps' `gate`).
 */
import type { Inject } from "./inject.mjs";

/** A message as the addon's inbox calls return it (`content` and `fromAlias` are untrusted). */
export interface PeerMessage {
  messageId: string;
  fromAlias: string;
  toAlias: string;
  content: string;
  ts: number;
  via: string[];
  roomId?: string | null;
  fromSessionId?: string | null;
}

/** A message the Rust inbound gate accepted, with the frame the model is to see. */
export interface Deliverable {
  message: PeerMessage;
  /** Framed by the Rust envelope module; peer text never reaches the model any other way. */
  framed: string;
  /** Set when the whole body is a permission reply checked against our pending slots. */
  permissionReply?: { permId: string; verdict: string; fromAlias: string; verified: boolean } | null;
}

/**
 * Show one peer message to the model of `sessionId` as a synthetic user text part that
 * carries `metadata.peerMessage` (the provenance mark). Receives only `inject`.
 */
export async function surfaceAdvisory(item: Deliverable, sessionId: string, inject: Inject): Promise<void> {
  const message = item.message;
  await inject(sessionId, {
    type: "text",
    text: item.framed,
    synthetic: true,
    metadata: {
      peerMessage: { messageId: message.messageId, from: message.fromAlias, via: [...message.via] },
    },
  });
}

/** What the delivery queue needs from the rest of the plugin. */
export interface DeliveryDeps {
  /**
   * Run the session's inbox through the Rust inbound gate and return the accepted messages
   * (still in the inbox, framed); undefined when the session is not registered.
   */
  gate(sessionId: string): Deliverable[] | undefined;
  /** Whether the session's inbox has anything (cheap; the fallback timer's check). */
  pending(sessionId: string): boolean;
  /** Acknowledge (archive) messages, with a `delivered` or `duplicate` receipt for their senders. */
  ack(sessionId: string, messageIds: string[], status: "delivered" | "duplicate"): void;
  /**
   * Show a checked permission reply to the human at once (toast + log), even while the
   * session is busy (it is: its request is pending). Called once per message.
   */
  advise?(sessionId: string, item: Deliverable): void;
  /** Housekeeping on the fallback timer (e.g. expiring held messages). */
  housekeeping?(sessionId: string): void;
  /** Whether the session is running a turn; `undefined` when not known yet. */
  isBusy(sessionId: string): boolean | undefined;
  setBusy(sessionId: string, busy: boolean): void;
  /**
   * Ask OpenCode for the session's status now (`GET /session/status`): `true` busy, `false`
   * idle, `undefined` when the call failed. Asked right before each injection (issue 19,
   * the busy race: the user's prompt may have started a turn since the last idle event).
   */
  statusNow?(sessionId: string): Promise<boolean | undefined>;
  /** Message ids already shown in the session's transcript (read once after a restart). */
  injectedInTranscript(sessionId: string): Promise<Set<string>>;
  /** Sessions to look at on the fallback timer. */
  sessions(): string[];
  /** Refresh busy flags from the server (fallback for missing idle events). */
  refreshStatus?(): Promise<void>;
  log(level: "debug" | "info" | "warn" | "error", message: string): void;
}

interface SessionState {
  running: boolean;
  advised: Set<string>;
  scanned: boolean;
  injected: Set<string>;
  failures: number;
  retryAt: number;
  busySince: number;
}

const MAX_REMEMBERED = 10_000;

/** The per-instance delivery queue. */
export class Delivery {
  private readonly state = new Map<string, SessionState>();
  private timer: ReturnType<typeof setInterval> | undefined;
  private readonly retryTimers = new Set<ReturnType<typeof setTimeout>>();
  private stopped = false;

  constructor(
    private readonly deps: DeliveryDeps,
    private readonly inject: Inject,
    private readonly opts: { fallbackIntervalMs: number; retryBaseMs: number },
  ) {}

  private st(sessionId: string): SessionState {
    let s = this.state.get(sessionId);
    if (!s) {
      s = { running: false, advised: new Set(), scanned: false, injected: new Set(), failures: 0, retryAt: 0, busySince: 0 };
      this.state.set(sessionId, s);
    }
    return s;
  }

  /** Something changed for `sessionId` (inbox write, idle): try to deliver soon. */
  kick(sessionId: string): void {
    if (this.stopped) return;
    queueMicrotask(() => {
      this.flush(sessionId).catch((err) => this.deps.log("error", `delivery to ${sessionId}: ${String(err)}`));
    });
  }

  /** Start the fallback timer (unref'd: it never keeps the process alive). */
  start(): void {
    if (this.timer || this.stopped) return;
    this.timer = setInterval(() => {
      void this.tick().catch((err) => this.deps.log("warn", `fallback tick: ${String(err)}`));
    }, this.opts.fallbackIntervalMs);
    this.timer.unref?.();
  }

  private async tick(): Promise<void> {
    const now = Date.now();
    let refresh = false;
    for (const sid of this.deps.sessions()) {
      this.deps.housekeeping?.(sid);
      if (!this.deps.pending(sid)) continue;
      const busy = this.deps.isBusy(sid);
      if (busy === undefined) {
        refresh = true;
      } else if (busy) {
        const s = this.st(sid);
        if (!s.busySince) s.busySince = now;
        if (now - s.busySince > 3 * this.opts.fallbackIntervalMs) refresh = true;
      } else {
        this.kick(sid);
      }
    }
    if (refresh && this.deps.refreshStatus) {
      await this.deps.refreshStatus();
      for (const sid of this.deps.sessions()) if (this.deps.isBusy(sid) === false) this.kick(sid);
    }
  }

  /** Stop timers. Idempotent. */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    for (const t of this.retryTimers) clearTimeout(t);
    this.retryTimers.clear();
  }

  /** Deliver at most one message to `sessionId` if it is idle. Exposed for tests. */
  async flush(sessionId: string): Promise<void> {
    const s = this.st(sessionId);
    if (s.running || this.stopped) return;
    s.running = true;
    try {
      // The gate runs on every wake-up, busy or not: it only sorts the inbox (held, refused,
      // checked permission replies) and injects nothing.
      const items = this.deps.gate(sessionId);
      if (!items || items.length === 0) return;
      for (const item of items) {
        if (item.permissionReply && !s.advised.has(item.message.messageId)) {
          s.advised.add(item.message.messageId);
          this.deps.advise?.(sessionId, item);
        }
      }
      // Busy, or not known yet (the fallback timer asks the server): inject nothing now.
      if (this.deps.isBusy(sessionId) !== false) return;
      s.busySince = 0;
      if (Date.now() < s.retryAt) return;
      const messages = items.map((i) => i.message);
      if (!s.scanned) {
        for (const id of await this.deps.injectedInTranscript(sessionId)) s.injected.add(id);
        s.scanned = true;
      }
      const already = messages.filter((m) => s.injected.has(m.messageId)).map((m) => m.messageId);
      if (already.length > 0) {
        this.deps.log("info", `dropping ${already.length} already-injected duplicate(s) for ${sessionId}`);
        this.safeAck(sessionId, already, "duplicate");
      }
      const next = items.find((i) => !s.injected.has(i.message.messageId));
      if (!next || this.stopped) return;
      // The busy race: re-check right before promptAsync, after every await above. A turn
      // the user started meanwhile would fold this message into it; wait for its idle.
      // (A failed status call does not block delivery: the Rust gate never lets a peer
      // message that follows an unanswered user message count as starting a turn.)
      if (this.deps.isBusy(sessionId) !== false) return;
      if ((await this.deps.statusNow?.(sessionId)) === true) {
        this.deps.setBusy(sessionId, true);
        this.deps.log("debug", `${sessionId} turned busy before injection; waiting for idle`);
        return;
      }
      if (this.stopped || this.deps.isBusy(sessionId) !== false) return;
      // The injection starts a turn: count the session busy from now until OpenCode says idle.
      this.deps.setBusy(sessionId, true);
      try {
        await surfaceAdvisory(next, sessionId, this.inject);
      } catch (err) {
        this.deps.setBusy(sessionId, false);
        s.failures += 1;
        const delay = Math.min(this.opts.retryBaseMs * 2 ** (s.failures - 1), 30_000);
        s.retryAt = Date.now() + delay;
        this.deps.log("warn", `injection into ${sessionId} failed (attempt ${s.failures}), retry in ${delay} ms: ${String(err)}`);
        const t = setTimeout(() => {
          this.retryTimers.delete(t);
          this.kick(sessionId);
        }, delay);
        t.unref?.();
        this.retryTimers.add(t);
        return;
      }
      s.failures = 0;
      s.retryAt = 0;
      s.injected.add(next.message.messageId);
      if (s.injected.size > MAX_REMEMBERED) {
        const oldest = s.injected.values().next().value;
        if (oldest !== undefined) s.injected.delete(oldest);
      }
      this.safeAck(sessionId, [next.message.messageId], "delivered");
    } finally {
      s.running = false;
    }
  }

  private safeAck(sessionId: string, ids: string[], status: "delivered" | "duplicate"): void {
    try {
      this.deps.ack(sessionId, ids, status);
    } catch (err) {
      // The id stays in `injected`, so it is not shown again; a restart finds it in the transcript.
      this.deps.log("warn", `ack for ${sessionId} failed: ${String(err)}`);
    }
  }

  /** Forget a session (deleted). */
  forget(sessionId: string): void {
    this.state.delete(sessionId);
  }
}
