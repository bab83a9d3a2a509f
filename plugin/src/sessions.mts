/**
 * Which OpenCode sessions of this instance are registered with the broker, and whether each
 * is busy. One `Broker` handle per root session; `task` child sessions never register and
 * act through their root session. All state belongs to one plugin instance.
 */
import type { Addon } from "./addon.mjs";
import type { HostClient, HostSession } from "./host.mjs";
import type { Logger } from "./log.mjs";
import type { BridgeOptions } from "./options.mjs";

type Broker = InstanceType<Addon["Broker"]>;

/** How many recent user message ids are kept per session (to tell a new message from an update). */
const USER_IDS_KEPT = 32;

/**
 * How long (ms) a turn may stay "starting" (a user message seen, no busy status yet) before
 * the server's idle is believed: OpenCode sets busy milliseconds after `chat.message`; a
 * `noReply` message never does.
 */
export const STARTING_GRACE_MS = 1000;

/**
 * How long (ms) a user message seen in `chat.message` but not stored yet (no `message.updated`)
 * keeps its session busy against the server's idle. OpenCode awaits every plugin's
 * `chat.message` hook before it stores the message and starts the loop, so another plugin's
 * slow hook keeps the status idle for as long as it runs (red team 3). The cap only ends the
 * wait for a message that is never stored (its creation failed).
 */
export const UNSTORED_CAP_MS = 30_000;

/** Registration and busy/idle state of the instance's sessions. */
export class Sessions {
  private readonly brokers = new Map<string, Broker>();
  private readonly parents = new Map<string, string | null>();
  private readonly busy = new Map<string, boolean>();
  /**
   * Sessions marked busy by a new user message whose loop OpenCode has not confirmed yet (no
   * `session.status` busy since): the time it was seen (`Date.now()`, ms). See
   * {@link Sessions.turnStarting}.
   */
  private readonly starting = new Map<string, number>();
  /**
   * User messages seen in `chat.message` (created, not stored yet) per starting session: the
   * grace of {@link STARTING_GRACE_MS} runs only from their storing (see
   * {@link Sessions.status}).
   */
  private readonly unstored = new Map<string, Set<string>>();
  /** The latest user message ids seen per session (chat.message, message.updated), newest last. */
  private readonly userMessages = new Map<string, string[]>();
  private readonly lookups = new Map<string, Promise<string | null | undefined>>();
  private closed = false;

  constructor(
    private readonly addon: Addon,
    private readonly client: HostClient,
    private readonly directory: string,
    private readonly options: BridgeOptions,
    private readonly logger: Logger,
    private readonly pluginVersion: string,
    private readonly onRegistered: (sessionId: string, broker: Broker) => void,
  ) {}

  /** Record a session seen in `session.created` / `session.updated`; registers root sessions. */
  observe(info: HostSession): Broker | undefined {
    if (this.closed || !info?.id) return undefined;
    this.parents.set(info.id, info.parentID ?? null);
    if (info.parentID) return undefined;
    return this.register(info.id);
  }

  /** The root session id of `sessionId` (itself for a root), fetching unknown sessions once. */
  async rootOf(sessionId: string): Promise<string | null> {
    let id: string | null = sessionId;
    for (let hops = 0; id && hops < 16; hops++) {
      const parent = await this.parentOf(id);
      if (parent === undefined) return null;
      if (parent === null) return id;
      id = parent;
    }
    return null;
  }

  private async parentOf(sessionId: string): Promise<string | null | undefined> {
    if (this.parents.has(sessionId)) return this.parents.get(sessionId);
    let lookup = this.lookups.get(sessionId);
    if (!lookup) {
      lookup = this.client.session
        .get({ path: { id: sessionId } })
        .then((r) => {
          if (!r?.data?.id) return undefined;
          const parent = r.data.parentID ?? null;
          this.parents.set(sessionId, parent);
          return parent;
        })
        .catch(() => undefined);
      this.lookups.set(sessionId, lookup);
    }
    try {
      return await lookup;
    } finally {
      this.lookups.delete(sessionId);
    }
  }

  /** The broker of a root session, registering it on first use (after a plugin restart). */
  async brokerFor(sessionId: string): Promise<Broker | undefined> {
    const root = await this.rootOf(sessionId);
    if (!root) return undefined;
    return this.brokers.get(root) ?? this.register(root);
  }

  /** The broker of a registered root session, without side effects. */
  get(sessionId: string): Broker | undefined {
    return this.brokers.get(sessionId);
  }

  /** Every registered session id. */
  registered(): string[] {
    return [...this.brokers.keys()];
  }

  private register(sessionId: string): Broker | undefined {
    const existing = this.brokers.get(sessionId);
    if (existing) return existing;
    // Closed (disposed, or retired in favour of another instance for this directory).
    if (this.closed) return undefined;
    try {
      const alias = this.options.alias ?? this.addon.defaultAlias(this.directory, sessionId);
      const broker = this.addon.Broker.open({
        sessionId,
        alias,
        autoAlias: true,
        root: this.options.brokerRoot,
        directory: this.directory,
        pid: process.pid,
        pluginVersion: this.pluginVersion,
        clientType: "opencode",
        maxMessageBytes: this.options.maxMessageBytes,
        inbound: this.options.inbound,
        // Under Bun (OpenCode's runtime) process.env changes do not reach native code: hand
        // the environment over explicitly.
        env: Object.fromEntries(Object.entries(process.env).filter((e): e is [string, string] => typeof e[1] === "string")),
        heldCap: this.options.heldCap,
        heldTtlSecs: this.options.heldTtlSecs,
        rateBurst: this.options.rateBurst,
        rateWindowSecs: this.options.rateWindowSecs,
      });
      this.brokers.set(sessionId, broker);
      this.logger.log("info", `registered session ${sessionId} as ${broker.alias} in ${broker.root}`);
      this.onRegistered(sessionId, broker);
      return broker;
    } catch (err) {
      const e = err as { code?: string; message?: string };
      this.logger.log("error", `cannot register session ${sessionId}: ${e.code ?? ""} ${e.message ?? String(err)}`);
      return undefined;
    }
  }

  /**
   * Unregister a session and free its alias for new sessions (alias book). `ended`
   * (`session.deleted`): its undelivered messages also go to dead-letter, each sender getting
   * a final `dropped` receipt ("recipient session ended").
   */
  forget(sessionId: string, ended = false): void {
    this.parents.delete(sessionId);
    this.busy.delete(sessionId);
    this.starting.delete(sessionId);
    this.unstored.delete(sessionId);
    this.userMessages.delete(sessionId);
    const b = this.brokers.get(sessionId);
    if (!b) return;
    this.brokers.delete(sessionId);
    try {
      if (ended) {
        const n = b.endSession();
        if (n > 0) this.logger.log("info", `session ${sessionId} ended: ${n} undelivered message(s) dead-lettered, senders told`);
      } else b.closeAndForgetAlias();
    } catch (err) {
      this.logger.log("warn", `unregister ${sessionId}: ${(err as Error).message}`);
    }
  }

  /**
   * Self-healing: when a session's handle lost its registration or its inbox watch (the broker
   * root was deleted, perhaps recreated), close it and register the session again (a new
   * handle, a new watch), logging it once. A failed attempt leaves the session unregistered;
   * its next event registers it (`brokerFor`).
   */
  heal(sessionId: string): void {
    const b = this.brokers.get(sessionId);
    if (!b || this.closed || b.isHealthy()) return;
    const root = b.root;
    this.brokers.delete(sessionId);
    try {
      b.close();
    } catch {
      // its registration is gone already
    }
    this.logger.log("warn", `session ${sessionId}: its registration or inbox watch in ${root} was lost (the broker root was deleted or replaced); registering it again`);
    this.register(sessionId);
  }

  /**
   * Mark a session busy or idle outright (the delivery's own injection and its failures). A
   * status reported by OpenCode goes through {@link Sessions.status} instead.
   */
  setBusy(sessionId: string, busy: boolean): void {
    this.busy.set(sessionId, busy);
    this.starting.delete(sessionId);
    this.unstored.delete(sessionId);
  }

  /**
   * A user message for `sessionId` was seen in OpenCode's own process (the `chat.message` hook,
   * or a `message.updated` of a user message not seen before), or the delivery is about to
   * inject one (no id): count the session busy from now, before OpenCode starts its loop. Why: OpenCode 1.18.33 calls `chat.message` inside
   * `createUserMessage`, before the message is stored and before the loop sets the status to
   * busy, so this is earlier than any `session.status` event and than `GET /session/status`
   * (issue 19, the busy race: a peer message injected in that window is folded into the
   * user's turn). Returns false when this message id was seen before (its later updates, e.g.
   * the summary OpenCode adds after the turn, start nothing).
   *
   * Until OpenCode confirms the loop (a busy status), an idle status event is taken for a
   * stale one (published before this message) and ignored; a user message that starts no loop
   * (`noReply`) is settled by the fallback timer's server check ({@link Sessions.status}
   * with `fromServer`, {@link Sessions.startingFor}).
   *
   * `stored`: the message is stored already (`message.updated`); false for `chat.message`,
   * which OpenCode calls before it stores the message. While a message seen there is not
   * stored, the server's idle does not apply (up to {@link UNSTORED_CAP_MS}); once it is, the
   * grace starts again from then.
   */
  turnStarting(sessionId: string, messageId?: string, stored = false): boolean {
    if (messageId) {
      const seen = this.userMessages.get(sessionId) ?? [];
      if (seen.includes(messageId)) {
        const pending = this.unstored.get(sessionId);
        if (stored && pending?.delete(messageId) && this.starting.has(sessionId)) this.starting.set(sessionId, Date.now());
        return false;
      }
      seen.push(messageId);
      if (seen.length > USER_IDS_KEPT) seen.shift();
      this.userMessages.set(sessionId, seen);
      if (!stored) {
        const pending = this.unstored.get(sessionId) ?? new Set<string>();
        pending.add(messageId);
        this.unstored.set(sessionId, pending);
      }
    }
    this.busy.set(sessionId, true);
    if (!this.starting.has(sessionId)) this.starting.set(sessionId, Date.now());
    return true;
  }

  /**
   * A status reported by OpenCode: a `session.status` / `session.idle` event, or (with
   * `fromServer`) the fallback timer's `GET /session/status`. Busy always applies and
   * confirms a starting turn. Idle does not apply while a turn is starting
   * ({@link Sessions.turnStarting}): from an event it is stale; from the server it applies
   * only once the turn has been starting for {@link STARTING_GRACE_MS} (a `noReply` message, or
   * a loop that never started). Returns whether the session is now idle.
   */
  status(sessionId: string, busy: boolean, fromServer = false): boolean {
    if (busy) {
      this.setBusy(sessionId, true);
      return false;
    }
    const since = this.starting.get(sessionId);
    if (since !== undefined && (!fromServer || Date.now() - since < STARTING_GRACE_MS)) return false;
    // A user message created but not stored yet: its loop has not started, whatever the server says.
    if (since !== undefined && (this.unstored.get(sessionId)?.size ?? 0) > 0 && Date.now() - since < UNSTORED_CAP_MS) return false;
    this.setBusy(sessionId, false);
    return true;
  }

  /** Since when (`Date.now()`, ms) a turn of `sessionId` is starting unconfirmed, if one is. */
  startingFor(sessionId: string): number | undefined {
    return this.starting.get(sessionId);
  }

  /**
   * Whether a session is running a turn: `undefined` while unknown (registered after a
   * restart, before any status event). Delivery treats unknown as "not yet": injecting into
   * a session that is in fact busy would fold the message into the user's turn.
   */
  isBusy(sessionId: string): boolean | undefined {
    return this.busy.get(sessionId);
  }

  /**
   * The instance is being disposed: unregister every session of this instance so the
   * registry does not fill with stale entries (Rust `Broker.shutdown`: a session with open
   * pending-reply slots keeps its registration, for c2c's M4 guard). Each keeps its alias in
   * the root's alias book and gets it back when it registers again. No registration happens
   * afterwards. Idempotent; never throws.
   */
  shutdownAll(): void {
    this.closed = true;
    for (const [id, b] of [...this.brokers]) {
      this.brokers.delete(id);
      try {
        const outcome = b.shutdown();
        if (outcome === "kept-for-pending-slots") {
          this.logger.log("info", `kept the registration of ${id} (${b.alias}) at shutdown: it has open pending-reply slots`);
        }
      } catch (err) {
        this.logger.log("warn", `unregister ${id} at shutdown: ${(err as Error).message}`);
      }
    }
  }

  /** Close every handle at shutdown: {@link Sessions.shutdownAll}. */
  closeAll(): void {
    this.shutdownAll();
  }
}
