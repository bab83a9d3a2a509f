/**
 * Delivery (surfaceAdvisory): peer messages from the broker inbox into an OpenCode session.
 *
 * - One message per turn, injected only while the session is idle; while it is busy the
 *   message waits in the inbox and is flushed on idle. Why: a message injected into a busy
 *   session is folded into the running turn, which breaks provenance (opencode-host.md,
 *   busy-session hazard). A fallback timer covers a missing `session.idle`.
 * - "Delivered" means persisted: `promptAsync`'s 204 only says OpenCode accepted the prompt
 *   (in a fresh session the message was stored 3.6 s later; a crash in that window lost it).
 *   A message is acknowledged (archived, `delivered` receipt) only once it is seen stored in
 *   the session: a `message.part.updated` event carrying its `metadata.peerMessage.messageId`
 *   ({@link Delivery.stored}), or, after `confirmTimeoutMs` without one, a read of the
 *   transcript. Not in the transcript by then: it is injected again (the transcript check
 *   before every injection keeps it single). Until then nothing else is injected.
 * - At-least-once: a failed injection leaves the message in the inbox and retries with backoff.
 * - Never twice: injected ids are remembered, and after a restart the session's transcript
 *   (`metadata.peerMessage.messageId` of its parts) is read once before the first injection;
 *   a message found there is acknowledged as `delivered` (it was stored, the ack was lost).
 * - The user's stop wins: after the user aborts a turn ({@link Delivery.pause}) nothing more is
 *   injected into that session until the user prompts again or runs `/peers-inbox`
 *   ({@link Delivery.resume}); messages stay queued.
 *
 * This module receives only the {@link Inject} capability; framing and the inbound policy
 * are decided in Rust (the deps' `gate`).
 */
import type { DeliverableMessage, InboxMessage } from "../../index.js";
import type { Inject } from "./inject.mjs";
import { mark } from "./trace.mjs";

/** A message as the addon's inbox calls return it (`content` and `fromAlias` are untrusted). */
export type PeerMessage = InboxMessage;

/**
 * A message the Rust inbound gate accepted, with the frame the model is to see (`framed`:
 * peer text never reaches the model any other way).
 */
export type Deliverable = DeliverableMessage;

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
  /**
   * Tell the senders of these queued messages that delivery is paused by the recipient's user
   * (a `paused` receipt; the messages stay in the inbox). Called once per message per pause.
   */
  paused?(sessionId: string, messageIds: string[]): void;
  /** Housekeeping on the fallback timer (e.g. expiring held messages). */
  housekeeping?(sessionId: string): void;
  /** Whether the session is running a turn; `undefined` when not known yet. */
  isBusy(sessionId: string): boolean | undefined;
  setBusy(sessionId: string, busy: boolean): void;
  /**
   * Since when (`Date.now()`, ms) a turn of the session is starting unconfirmed: a user message
   * was seen in-process (`chat.message`) and OpenCode has not reported the loop busy yet. The
   * fallback timer asks the server about such a session after `startingGraceMs` (a `noReply`
   * message starts no loop and must not hold delivery until the long busy timeout).
   */
  startingFor?(sessionId: string): number | undefined;
  /** Message ids already shown in the session's transcript (read once after a restart). */
  injectedInTranscript(sessionId: string): Promise<Set<string>>;
  /** Sessions to look at on the fallback timer. */
  sessions(): string[];
  /** Refresh busy flags from the server (fallback for missing idle events). */
  refreshStatus?(): Promise<void>;
  log(level: "debug" | "info" | "warn" | "error", message: string): void;
}

/** A message injected (204) but not yet seen stored in the session. */
interface InFlight {
  id: string;
  /** `promptAsync` answered: the message may be acknowledged once it is seen stored. */
  accepted: boolean;
  /** A `message.part.updated` event carrying its id arrived. */
  stored: boolean;
  timer?: ReturnType<typeof setTimeout>;
  /** Transcript reads so far that did not find it. */
  checks: number;
}

interface SessionState {
  running: boolean;
  advised: Set<string>;
  scanned: boolean;
  injected: Set<string>;
  failures: number;
  retryAt: number;
  busySince: number;
  inflight?: InFlight;
  /** Set by a user abort: nothing is injected until {@link Delivery.resume}. */
  paused: boolean;
  /** Ids whose senders were told `paused` (each once per pause). */
  pausedTold: Set<string>;
  /**
   * The user message of the last stored injection; whether an answer to it completed without
   * error, and whether one failed (aborted or errored).
   */
  turn?: { userMessageId: string; completed: boolean; failed: boolean };
}

const MAX_REMEMBERED = 10_000;

/** Timing of the delivery queue, milliseconds. */
export interface DeliveryTiming {
  /** Fallback check interval (for when `session.idle` never comes). */
  fallbackIntervalMs: number;
  /** First retry delay after a failed injection (doubles up to 30 s). */
  retryBaseMs: number;
  /**
   * How long to wait for the stored-message event after the 204 before reading the
   * transcript (and injecting again if the message is not there). Default 15000.
   */
  confirmTimeoutMs?: number;
  /**
   * How long a turn may be "starting" (user message seen, no busy status) before the fallback
   * timer asks the server ({@link DeliveryDeps.startingFor}). Default 1000.
   */
  startingGraceMs?: number;
}

/** The per-instance delivery queue. */
export class Delivery {
  private readonly state = new Map<string, SessionState>();
  private timer: ReturnType<typeof setInterval> | undefined;
  private readonly retryTimers = new Set<ReturnType<typeof setTimeout>>();
  private stopped = false;

  constructor(
    private readonly deps: DeliveryDeps,
    private readonly inject: Inject,
    private readonly opts: DeliveryTiming,
  ) {}

  private st(sessionId: string): SessionState {
    let s = this.state.get(sessionId);
    if (!s) {
      s = {
        running: false,
        advised: new Set(),
        scanned: false,
        injected: new Set(),
        failures: 0,
        retryAt: 0,
        busySince: 0,
        paused: false,
        pausedTold: new Set(),
      };
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

  /**
   * OpenCode stored a part carrying `metadata.peerMessage.messageId === messageId` in
   * `sessionId` (`message.part.updated`): the message is persisted. Acknowledges it when it is
   * the one in flight (at once, or as soon as `promptAsync` has answered).
   */
  stored(sessionId: string, messageId: string, userMessageId?: string): void {
    const s = this.state.get(sessionId);
    if (!s) return;
    this.remember(s, messageId);
    if (userMessageId && s.turn?.userMessageId !== userMessageId) s.turn = { userMessageId, completed: false, failed: false };
    const f = s.inflight;
    if (!f || f.id !== messageId) return;
    f.stored = true;
    if (f.accepted) this.confirm(sessionId, s);
  }

  /**
   * The user stopped a turn of `sessionId` (abort): inject nothing more there until
   * {@link resume}. Queued messages stay in the inbox; their senders are told `paused`.
   */
  pause(sessionId: string): void {
    const s = this.st(sessionId);
    if (s.paused) return;
    s.paused = true;
    this.deps.log("info", `${sessionId}: the user stopped a turn; peer delivery into it is paused until the user prompts again or runs /peers-inbox`);
    this.kick(sessionId);
  }

  /**
   * An assistant message answering `parentMessageId` in `sessionId` was updated
   * (`message.updated`): `completed` when it has `time.completed`, `failed` when its `error` is
   * `MessageAbortedError` (the user's abort).
   */
  answered(sessionId: string, parentMessageId: string, info: { completed: boolean; failed: boolean }): void {
    const t = this.state.get(sessionId)?.turn;
    if (!t || t.userMessageId !== parentMessageId) return;
    if (info.failed) t.failed = true;
    else if (info.completed) t.completed = true;
  }

  /**
   * `sessionId` went idle. A turn we started that ends without a completed answer, or with an
   * aborted one, was stopped: OpenCode 1.18.33 publishes `session.error` MessageAbortedError
   * for an abort while the model answers, but only `idle` for one before the model began.
   * Delivery pauses as after an abort; the user's next prompt resumes it.
   */
  turnEnded(sessionId: string): void {
    const s = this.state.get(sessionId);
    const t = s?.turn;
    if (!s || !t) return;
    s.turn = undefined;
    if (!t.completed || t.failed) this.pause(sessionId);
  }

  /** The user prompted again (or ran `/peers-inbox`): delivery into `sessionId` resumes. */
  resume(sessionId: string): void {
    const s = this.state.get(sessionId);
    if (!s?.paused) return;
    s.paused = false;
    s.pausedTold.clear();
    this.deps.log("info", `${sessionId}: peer delivery resumed`);
    this.kick(sessionId);
  }

  /** Whether delivery into `sessionId` is paused by a user abort. */
  isPaused(sessionId: string): boolean {
    return this.state.get(sessionId)?.paused === true;
  }

  private remember(s: SessionState, id: string): void {
    s.injected.add(id);
    if (s.injected.size > MAX_REMEMBERED) {
      const oldest = s.injected.values().next().value;
      if (oldest !== undefined) s.injected.delete(oldest);
    }
  }

  private confirm(sessionId: string, s: SessionState): void {
    const f = s.inflight;
    if (!f) return;
    if (f.timer) clearTimeout(f.timer);
    s.inflight = undefined;
    this.remember(s, f.id);
    this.safeAck(sessionId, [f.id], "delivered");
    this.deps.log("debug", `${sessionId}: ${f.id} stored in the session; acknowledged`);
  }

  /** No stored event within the timeout: read the transcript; not there, inject again. */
  private async verify(sessionId: string): Promise<void> {
    const s = this.state.get(sessionId);
    const f = s?.inflight;
    if (!s || !f || this.stopped) return;
    f.timer = undefined;
    let ids: Set<string>;
    try {
      ids = await this.deps.injectedInTranscript(sessionId);
    } catch (err) {
      this.deps.log("warn", `${sessionId}: cannot read the transcript to confirm ${f.id}: ${String(err)}`);
      this.armConfirm(sessionId, f);
      return;
    }
    if (s.inflight !== f) return;
    if (ids.has(f.id)) {
      this.confirm(sessionId, s);
      return;
    }
    f.checks += 1;
    if (f.checks < 2) {
      // One more wait first: a busy server may store it late.
      this.armConfirm(sessionId, f);
      return;
    }
    s.inflight = undefined;
    this.deps.setBusy(sessionId, false);
    this.deps.log("warn", `${sessionId}: ${f.id} was accepted but never stored; injecting it again`);
    this.kick(sessionId);
  }

  private armConfirm(sessionId: string, f: InFlight): void {
    if (this.stopped) return;
    const t = setTimeout(() => {
      void this.verify(sessionId).catch((err) => this.deps.log("warn", `confirm ${sessionId}: ${String(err)}`));
    }, this.opts.confirmTimeoutMs ?? 15_000);
    t.unref?.();
    f.timer = t;
  }

  /** Start the fallback timer (unref'd: it never keeps the process alive). */
  start(): void {
    if (this.timer || this.stopped) return;
    this.timer = setInterval(() => {
      void this.tick().catch((err) => this.deps.log("warn", `fallback tick: ${String(err)}`));
    }, this.opts.fallbackIntervalMs);
    this.timer.unref?.();
  }

  /** One fallback check: the timer's body (exposed for tests). */
  async tick(): Promise<void> {
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
        const starting = this.deps.startingFor?.(sid);
        if (starting !== undefined && now - starting >= (this.opts.startingGraceMs ?? 1000)) refresh = true;
      } else {
        this.kick(sid);
      }
    }
    if (refresh && this.deps.refreshStatus) {
      await this.deps.refreshStatus();
      for (const sid of this.deps.sessions()) if (this.deps.isBusy(sid) === false) this.kick(sid);
    }
  }

  /** Stop timers. Idempotent. Messages in flight stay in the inbox (a restart confirms them). */
  stop(): void {
    this.stopped = true;
    if (this.timer) clearInterval(this.timer);
    this.timer = undefined;
    for (const t of this.retryTimers) clearTimeout(t);
    this.retryTimers.clear();
    for (const s of this.state.values()) if (s.inflight?.timer) clearTimeout(s.inflight.timer);
  }

  /** Deliver at most one message to `sessionId` if it is idle. Exposed for tests. */
  async flush(sessionId: string): Promise<void> {
    const s = this.st(sessionId);
    if (s.running || this.stopped) return;
    s.running = true;
    mark("b.flush", { sid: sessionId });
    try {
      // The gate runs on every wake-up, busy or not: it only sorts the inbox (held, refused,
      // checked permission replies) and injects nothing.
      const items = this.deps.gate(sessionId);
      mark("b.gated", { sid: sessionId, n: items?.length ?? 0 });
      if (!items || items.length === 0) return;
      for (const item of items) {
        if (item.permissionReply && !s.advised.has(item.message.messageId)) {
          s.advised.add(item.message.messageId);
          this.deps.advise?.(sessionId, item);
        }
      }
      if (s.inflight) {
        // Waiting for the message in flight to be stored; gone from the inbox (acknowledged
        // elsewhere, e.g. a second process): stop waiting.
        if (items.some((i) => i.message.messageId === s.inflight?.id)) return;
        if (s.inflight.timer) clearTimeout(s.inflight.timer);
        s.inflight = undefined;
      }
      if (s.paused) {
        const untold = items.map((i) => i.message.messageId).filter((id) => !s.pausedTold.has(id));
        if (untold.length > 0) {
          for (const id of untold) s.pausedTold.add(id);
          try {
            this.deps.paused?.(sessionId, untold);
          } catch (err) {
            this.deps.log("warn", `paused receipts for ${sessionId}: ${String(err)}`);
          }
        }
        return;
      }
      // Busy, or not known yet (the fallback timer asks the server): inject nothing now.
      if (this.deps.isBusy(sessionId) !== false) return;
      s.busySince = 0;
      if (Date.now() < s.retryAt) return;
      const messages = items.map((i) => i.message);
      if (!s.scanned) {
        for (const id of await this.deps.injectedInTranscript(sessionId)) this.remember(s, id);
        s.scanned = true;
      }
      const already = messages.filter((m) => s.injected.has(m.messageId)).map((m) => m.messageId);
      if (already.length > 0) {
        // Stored in the session before (a crash or restart lost the acknowledgement).
        this.deps.log("info", `confirming ${already.length} message(s) already stored in ${sessionId}; not injecting them again`);
        this.safeAck(sessionId, already, "delivered");
      }
      const next = items.find((i) => !s.injected.has(i.message.messageId));
      if (!next || this.stopped || s.paused) return;
      // The busy race (issue 19): re-check right before promptAsync, after every await above.
      // A user message is counted busy in-process the moment OpenCode hands it to the plugin
      // (`chat.message`, before its loop starts: Sessions.turnStarting), which is earlier than
      // OpenCode's own status, so no server round trip is needed here. From this check to
      // setBusy below nothing yields.
      if (this.deps.isBusy(sessionId) !== false) return;
      const flight: InFlight = { id: next.message.messageId, accepted: false, stored: false, checks: 0 };
      s.inflight = flight;
      // The injection starts a turn: count the session busy from now until OpenCode says idle.
      this.deps.setBusy(sessionId, true);
      try {
        await surfaceAdvisory(next, sessionId, this.inject);
      } catch (err) {
        if (s.inflight === flight) s.inflight = undefined;
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
      if (s.inflight !== flight) return;
      flight.accepted = true;
      this.deps.log("info", `injected ${flight.id} into ${sessionId}; acknowledging once it is stored`);
      if (flight.stored) this.confirm(sessionId, s);
      else this.armConfirm(sessionId, flight);
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
    const s = this.state.get(sessionId);
    if (s?.inflight?.timer) clearTimeout(s.inflight.timer);
    this.state.delete(sessionId);
  }
}
