/**
 * c2c-bridge's OpenCode plugin: connects the parts; the handlers act.
 *
 * Loaded by OpenCode 1.18.33 from the package's `exports["./server"]`. Per plugin instance
 * (one serving instance per project directory per process, see instances.mts) it registers root sessions with
 * the broker, delivers peer messages when a session is idle, answers permission requests of
 * peer-triggered turns as the Rust gate decides (`peerPermissions`), and offers `peer_list`,
 * `peer_send` and `/peers`. Nothing is global.
 */
import { readFileSync } from "node:fs";
import { fileURLToPath } from "node:url";
import { loadAddon, type Addon } from "./addon.mjs";
import { Delivery } from "./delivery.mjs";
import { busyInStatusMap, decodeEvent, isPeerPart, peerMessageIdOf } from "./events.mjs";
import type { HostEvent, PluginHooks, PluginInput, ToolContext } from "./host.mjs";
import { makeInject } from "./inject.mjs";
import { claimDirectory, type Claim, type Served } from "./instances.mjs";
import { createLogger, forwardDiagnostics, safe, type Logger } from "./log.mjs";
import { describeModes, type Modes } from "./modes.mjs";
import { plainEnv, readOptions, reportOptionErrors } from "./options.mjs";
import { PermissionHandler } from "./permissions/handler.mjs";
import { makeReply } from "./permissions/reply.mjs";
import { Sessions } from "./sessions.mjs";
import { makeTools } from "./tools.mjs";
import { makeHistory, viaFor } from "./history.mjs";
import { mark, now, tracing } from "./trace.mjs";
import { adviceText, tellSupervisors } from "./supervisors.mjs";
import { peersInboxText, registerCommands } from "./commands.mjs";

const PLUGIN_ID = "c2c-bridge";

function packageVersion(): string {
  try {
    const pkg = JSON.parse(readFileSync(fileURLToPath(new URL("../../package.json", import.meta.url)), "utf8"));
    return typeof pkg.version === "string" ? pkg.version : "0.0.0";
  } catch {
    return "0.0.0";
  }
}

/** The plugin function: `(input, options?) => Promise<hooks>`. */
async function server(input: PluginInput, rawOptions?: Record<string, unknown>): Promise<PluginHooks> {
  const logger = createLogger(input?.client);
  // Calls to the server's own API must wait until this function has returned.
  setTimeout(() => logger.ready(), 0);

  const loaded = loadAddon();
  if (!loaded.ok) {
    logger.log(
      "error",
      `disabled: the native addon could not be loaded (${loaded.error}). In a clone, run \`npm run build\`; else reinstall c2c-bridge for this platform. OpenCode continues without it.`,
    );
    return {};
  }
  const addon = loaded.addon;
  forwardDiagnostics(addon, logger);

  // One serving instance per directory per process (see instances.mts).
  const spec = packageDirectory();
  const claim = claimDirectory(addon.canonicalDirectory(input.directory) ?? input.directory, {
    spec,
    options: rawOptions ?? {},
  });
  let effective = rawOptions;
  if (claim.others.length > 0) {
    effective = strictestOptions(addon, claim.allOptions);
    const specs = [...new Set([...claim.others.map((o) => o.spec), spec])];
    logger.log(
      "warn",
      `loaded ${claim.others.length + 1} times for ${input.directory} in this process (${specs.join(" and ")}${specs.length === 1 ? ", twice" : ""}): only one instance serves the directory, with the strictest settings of all (peerPermissions=${String(effective?.peerPermissions ?? "allow")}, inbound=${String(effective?.inbound ?? "accept")}). Name the package once (global or project config).`,
    );
  }
  const instance = startInstance(input, effective, logger, addon);
  claim.activate(instance.served);
  return guarded(claim, instance.hooks);
}

/** Where this copy of the package lives (what a config's plugin spec resolved to). */
function packageDirectory(): string {
  try {
    return fileURLToPath(new URL("../..", import.meta.url)).replace(/\/$/, "");
  } catch {
    return String(import.meta.url);
  }
}

/**
 * The options of several copies of the plugin for one directory: the newest copy's, with each
 * policy setting (`inbound`, `peerPermissions`) the strictest any copy was given (Rust decides
 * the order; an invalid value wins, so the setting fails closed).
 */
function strictestOptions(addon: Addon, all: Array<Record<string, unknown>>): Record<string, unknown> {
  const merged: Record<string, unknown> = { ...(all[all.length - 1] ?? {}) };
  for (const setting of ["inbound", "peerPermissions"]) {
    const values = all.map((o) => o[setting]).filter((v): v is string => typeof v === "string");
    const v = addon.strictestSetting(setting, values);
    if (v === null || v === undefined) delete merged[setting];
    else merged[setting] = v;
  }
  return merged;
}

/**
 * The hooks OpenCode gets: an instance that no longer serves its directory does nothing,
 * except its tools, which run on the serving instance (OpenCode may call either copy's).
 */
function guarded(claim: Claim, hooks: PluginHooks): PluginHooks {
  const tools = hooks.tool
    ? Object.fromEntries(
        Object.entries(hooks.tool).map(([name, def]) => [
          name,
          { ...def, execute: (args: Record<string, unknown>, ctx: ToolContext) => (claim.active()?.tools?.[name] ?? def).execute(args, ctx) },
        ]),
      )
    : undefined;
  return {
    event: async (x) => (claim.isActive() ? hooks.event?.(x) : undefined),
    config: hooks.config,
    tool: tools,
    "chat.message": async (i, o) => (claim.isActive() ? hooks["chat.message"]?.(i, o) : undefined),
    "command.execute.before": async (i, o) => (claim.isActive() ? hooks["command.execute.before"]?.(i, o) : undefined),
    dispose: async () => {
      claim.release();
      await hooks.dispose?.();
    },
  };
}

/** One plugin instance's parts, connected. */
function startInstance(
  input: PluginInput,
  rawOptions: Record<string, unknown> | undefined,
  logger: Logger,
  addon: Addon,
): { hooks: PluginHooks; served: Served } {
  const client = input.client;
  const { options, report } = readOptions(addon, rawOptions, process.env);
  const env = plainEnv(process.env);
  const version = packageVersion();
  const startedAtMs = Date.now();

  const delivery: { current?: Delivery } = {};
  const sessions = new Sessions(addon, client, input.directory, options, logger, version, (sid, broker) => {
    try {
      broker.watch(() => {
        mark("b.watch", { sid });
        delivery.current?.kick(sid);
      });
    } catch (err) {
      logger.log("warn", `no inbox watch for ${sid} (falling back to the timer): ${(err as Error).message}`);
    }
    delivery.current?.kick(sid);
  });

  delivery.current = new Delivery(
    {
      gate: (sid) => sessions.get(sid)?.gateInbox().deliver,
      pending: (sid) => (sessions.get(sid)?.peek().length ?? 0) > 0,
      // Off OpenCode's main thread (the libuv pool): this runs right after OpenCode stored the
      // injected message, while it is delivering that message to its clients.
      ack: (sid, ids, status) =>
        void sessions
          .get(sid)
          ?.acknowledgeAsync(ids, status)
          .catch((err: unknown) => logger.log("warn", `ack for ${sid} failed: ${String(err)}`)),
      paused: (sid, ids) => void sessions.get(sid)?.reportPaused(ids),
      housekeeping(sid) {
        sessions.heal(sid);
        void sessions.get(sid)?.expireHeld();
      },
      advise(sid, item) {
        const text = adviceText(item);
        if (!text) return;
        logger.log("info", `${sid}: ${text}`);
        void client.tui?.showToast?.({ body: { title: "c2c-bridge", message: text, variant: item.permissionReply?.verified ? "info" : "warning" } })?.catch?.(() => {});
      },
      isBusy: (sid) => sessions.isBusy(sid),
      // The delivery's own injection starts a turn: busy, unconfirmed until OpenCode's busy
      // status (the session.idle that follows the session.status idle it was kicked by is
      // stale, not the end of the injected turn).
      setBusy: (sid, busy) => (busy ? void sessions.turnStarting(sid) : sessions.setBusy(sid, false)),
      startingFor: (sid) => sessions.startingFor(sid),
      sessions: () => sessions.registered(),
      async injectedInTranscript(sid) {
        const ids = new Set<string>();
        const res = await client.session.messages({ path: { id: sid } });
        for (const m of res?.data ?? []) {
          for (const p of m.parts ?? []) {
            const id = peerMessageIdOf(p);
            if (id) ids.add(id);
          }
        }
        return ids;
      },
      async refreshStatus() {
        const res = await client.session.status?.();
        const map = res?.data;
        if (!map) return;
        for (const sid of sessions.registered()) {
          const busy = busyInStatusMap(map, sid) === true;
          const was = sessions.isBusy(sid);
          // A turn that ended without an idle event ends here (and may have been a stop).
          if (sessions.status(sid, busy, true) && was === true) delivery.current?.turnEnded(sid);
        }
      },
      log: (level, message) => logger.log(level, message),
    },
    tracing ? tracedInject(makeInject(client)) : makeInject(client),
    options,
  );
  setTimeout(() => {
    // Once per instance, after this function returned (the toast calls the server's API).
    reportOptionErrors(report, logger, client);
    delivery.current?.start();
    void restoreRegistrations().catch((err) => logger.log("warn", `restoring registrations: ${String(err)}`));
  }, 0);

  /**
   * After an OpenCode restart, sessions of this directory that were registered by the previous
   * process (now dead, or unregistered at its shutdown and remembered in the root's alias
   * book) get their registration back at once, with their alias, so mail to them is not
   * refused until someone happens to use them.
   */
  async function restoreRegistrations(): Promise<void> {
    const loc = addon.resolveRoot(options.brokerRoot ?? null, input.directory, env);
    if (!loc.exists) return;
    const ours = addon.canonicalDirectory(input.directory);
    if (!ours) return;
    const ids = new Set<string>();
    const live = new Set<string>();
    for (const reg of addon.listRegistrations(loc.path)) {
      if (reg.alive) live.add(reg.sessionId);
      else if (reg.clientType === "opencode" && reg.directory === ours) ids.add(reg.sessionId);
    }
    for (const entry of addon.listAliasBook(loc.path)) {
      if (entry.directory === ours && !live.has(entry.sessionId)) ids.add(entry.sessionId);
    }
    for (const id of ids) {
      if (sessions.get(id)) continue;
      const res = await client.session.get({ path: { id } }).catch(() => undefined);
      if (res?.data?.id && !res.data.parentID) sessions.observe(res.data);
    }
  }

  // The permission gate (Rust) and the handler that carries its decisions out. If the gate
  // cannot be built (e.g. a misspelt peerPermissions), permission handling is off: no request
  // is answered, so OpenCode prompts for every one. Messaging keeps working.
  const modes: Modes = {
    autoAnswersOff: report.autoAnswersOff,
    configErrors: report.errors.map((e) => `${e.code} ${e.message}`),
  };
  try {
    // Which root and why (an option from the environment resolves as the environment).
    const loc = addon.resolveRoot(report.fromEnv.includes("brokerRoot") ? null : (options.brokerRoot ?? null), input.directory, env);
    modes.root = { path: loc.path, reason: loc.reason };
  } catch (err) {
    modes.root = { path: "(none)", reason: (err as Error).message };
  }
  const gateOptions = {
    directory: input.directory,
    worktree: input.worktree || input.directory,
    brokerRoot: options.brokerRoot,
    startedAtMs,
  };
  let gate: InstanceType<typeof addon.PermissionGate> | undefined;
  // The turn index behind provenance and hop chains; the gate itself when it could be built.
  let turns: InstanceType<typeof addon.PermissionGate> | undefined;
  try {
    // With a configuration error that touches permissions (or an unknown key) the gate
    // answers nothing: every request goes to OpenCode's prompt (reason `config-error`).
    gate = new addon.PermissionGate({ ...gateOptions, peerPermissions: options.peerPermissions, env, autoAnswersOff: report.autoAnswersOff });
    turns = gate;
    modes.peerPermissions = gate.mode;
    modes.peerPermissionsSource = gate.modeSource;
    if (gate.auditError) logger.log("warn", `permission decisions are not audited: ${gate.auditError}`);
  } catch (err) {
    const e = err as { code?: string; message?: string };
    modes.permissionsDisabled = `${e.code ?? "E_UNKNOWN"}: ${e.message ?? String(err)}`;
    logger.log("error", `permission handling is off, every request goes to OpenCode's prompt: ${modes.permissionsDisabled}`);
    // Keep a turn index all the same (mode `ask`, never consulted for replies), so messages
    // sent from peer-triggered turns still continue their hop chain.
    try {
      turns = new addon.PermissionGate({ ...gateOptions, peerPermissions: "ask", env: {} });
    } catch {
      turns = undefined;
    }
  }
  const history = makeHistory(client);
  const permissions = gate
    ? new PermissionHandler({
        gate,
        history,
        reply: makeReply(client, input.serverUrl, input.directory),
        async owns(sid) {
          return (await sessions.brokerFor(sid)) !== undefined;
        },
        async onLeft(_kind, d, request) {
          if (options.supervisors.length === 0) return;
          const broker = await sessions.brokerFor(d.sessionId);
          if (broker) tellSupervisors(broker, options.supervisors, d, request, (l, m) => logger.log(l, m));
        },
        log: (level, message) => logger.log(level, message),
      })
    : undefined;

  const onEvent = async (event: HostEvent) => {
    // Every event goes to the gate first (synchronous, in order), so its turn index has seen
    // everything OpenCode published before a permission request arrives.
    if (turns) {
      try {
        turns.observe(event);
      } catch (err) {
        logger.log("warn", `gate.observe(${event.type}): ${(err as Error).message}`);
      }
    }
    const fact = decodeEvent(event);
    switch (fact.kind) {
      case "permission":
        // Not awaited: fetches for the need-* steps must not hold up the event hook.
        if (permissions) void permissions.handle(fact.event);
        break;
      case "session":
        // A new session is idle until its first prompt's status event.
        if (fact.created) sessions.setBusy(fact.info.id, false);
        sessions.observe(fact.info);
        break;
      case "session-deleted":
        sessions.forget(fact.sessionId, true);
        delivery.current?.forget(fact.sessionId);
        break;
      case "peer-part-stored":
        delivery.current?.stored(fact.sessionId, fact.peerMessageId, fact.messageId);
        break;
      case "answer":
        delivery.current?.answered(fact.sessionId, fact.parentId, { completed: fact.completed, failed: fact.failed });
        break;
      case "aborted":
        // The user's stop wins over queued peer messages.
        if (sessions.get(fact.sessionId)) delivery.current?.pause(fact.sessionId);
        break;
      case "user-message":
        // Normally seen first in chat.message; this covers a hook OpenCode did not call.
        // Stored: a message seen in chat.message (not stored then) may now start its grace.
        sessions.turnStarting(fact.sessionId, fact.messageId, true);
        break;
      case "status":
        // An idle while a user message's turn is starting is stale: ignored (Sessions.status).
        if (!sessions.status(fact.sessionId, fact.busy)) break;
        if (!fact.busy) {
          delivery.current?.turnEnded(fact.sessionId);
          await sessions.brokerFor(fact.sessionId);
          delivery.current?.kick(fact.sessionId);
        }
        break;
      default:
        break;
    }
  };

  let disposed: Promise<void> | undefined;
  const tools = makeTools(sessions, version, (ctx) => {
    const via = turns ? viaFor(turns, history, ctx.sessionID, ctx.messageID) : [];
    // A promise means the turn index lacked data and fetches it from OpenCode.
    if (tracing && !Array.isArray(via)) mark("a.via.fetch", { sid: ctx.sessionID });
    return via;
  });
  const served: Served = {
    tools,
    retire() {
      const ids = sessions.registered();
      delivery.current?.stop();
      sessions.closeAll();
      return ids;
    },
    adopt(ids) {
      for (const id of ids) sessions.observe({ id });
    },
  };
  const hooks: PluginHooks = {
    event: safe(logger, "event", async ({ event }) => {
      if (!tracing) return onEvent(event);
      // The synchronous part of the hook: what OpenCode's thread pays before it goes on.
      const t0 = now();
      const done = onEvent(event);
      mark("hook", { type: event.type, start: t0, ms: now() - t0 });
      return done;
    }),
    config: safe(logger, "config", async (cfg) => registerCommands(cfg)),
    // A message sent from a peer-triggered turn continues that turn's hop chain (Rust decides).
    tool: tools,
    // A prompt the user typed (no part carries our peerMessage mark) resumes delivery paused
    // by a user abort.
    // Also the earliest sign of a new turn, ours or the user's: OpenCode 1.18.33 calls
    // chat.message while it creates the user message, before its loop sets the session busy,
    // so the session is counted busy from here (the busy race, issue 19;
    // Sessions.turnStarting).
    "chat.message": safe(logger, "chat.message", async (input, output) => {
      const sid = input?.sessionID;
      if (!sid) return;
      const id = (output?.message as { id?: unknown } | undefined)?.id;
      sessions.turnStarting(sid, typeof id === "string" ? id : undefined);
      const peer = (output?.parts ?? []).some((part) => isPeerPart(part));
      if (!peer) delivery.current?.resume(sid);
    }),
    "command.execute.before": safe(logger, "command.execute.before", async (cmd, output) => {
      if (cmd.command !== "peers" && cmd.command !== "peers-inbox") return;
      if (cmd.command === "peers-inbox") delivery.current?.resume(cmd.sessionID);
      const broker = await sessions.brokerFor(cmd.sessionID);
      let text: string;
      if (!broker) text = `c2c-bridge: this session is not registered with the broker.\n${describeModes(modes)}\nTell the user.`;
      else if (cmd.command === "peers")
        text = `${broker.framedPeerList(version)}\n${describeModes({ ...modes, inbound: broker.inboundMode })}\nShow this list and the modes to the user as they are.`;
      else text = peersInboxText(broker, cmd.arguments ?? "");
      output.parts.splice(0, output.parts.length, { type: "text", text });
    }),
    dispose: () =>
      (disposed ??= (async () => {
        delivery.current?.stop();
        sessions.shutdownAll();
      })()),
  };
  return { hooks, served };
}

/** The inject capability with bench marks around it (`C2C_BRIDGE_TRACE`, see trace.mts). */
function tracedInject(inject: ReturnType<typeof makeInject>): ReturnType<typeof makeInject> {
  return async (sessionId, part) => {
    const id = (part.metadata as { peerMessage?: { messageId?: unknown } } | undefined)?.peerMessage?.messageId;
    mark("b.inject", { sid: sessionId, messageId: id });
    await inject(sessionId, part);
    mark("b.accepted", { sid: sessionId, messageId: id });
  };
}

/** OpenCode's preferred plugin module shape. */
export default { id: PLUGIN_ID, server };
