// @ts-check
// The CLI's session and listing commands: peers, send, inbox, held, receipts, rooms, log,
// sweep. Each is a thin layer over one or two addon exports: this file formats, it does not
// read broker files or decide anything the core decides (doctor: bin/lib/doctor.js; host-local
// verdicts: bin/lib/approval.js).
'use strict';

const { CliError, EXIT_FAILED, usage } = require('./cli-error.js');
const { hasSession, locateRoot, rootHint, withBroker } = require('./context.js');
const { fmtTs } = require('./terminal.js');

/** @typedef {import('./context.js').Context} Context */
/** @typedef {import('./context.js').Result} Result */
/** @typedef {import('../../index.js').InboxMessage} Message */

/** This package's version: what an up-to-date OpenCode peer records as its plugin version. */
function ownVersion() {
  return /** @type {{ version: string }} */ (require('../../package.json')).version;
}

/**
 * `peers`: every registration with liveness; OpenCode peers running another plugin version
 * than this package are flagged stale (the addon's rule, `isStalePlugin`).
 * @param {Context} ctx
 * @returns {Result}
 */
function peers({ addon, term: { safe }, values }) {
  const loc = locateRoot(addon, values);
  const version = ownVersion();
  const list = (loc.exists ? addon.listRegistrations(loc.path) : [])
    .map((p) => ({ ...p, stale: addon.isStalePlugin(p.clientType ?? null, p.pluginVersion ?? null, version) }));
  const text = list.length === 0
    ? [loc.exists
      ? `no registrations in ${safe(loc.path)} (${safe(loc.reason)})${rootHint(loc)}`
      : `no registrations: the broker root ${safe(loc.path)} does not exist yet (${safe(loc.reason)})${rootHint(loc)}`]
    : list.map((p) => {
      const stale = p.stale ? `  STALE (plugin ${safe(p.pluginVersion)}, this is ${version})` : '';
      return `${p.alive ? 'alive' : 'dead '}  ${safe(p.alias)}  ${safe(p.sessionId)}  pid=${p.pid ?? '-'}  client=${safe(p.clientType ?? '-')}  plugin=${safe(p.pluginVersion ?? '-')}  registered=${fmtTs(p.registeredAt)}${stale}`;
    });
  return { json: list, text };
}

/**
 * `send <alias> <text>` as the current session.
 * @param {Context} ctx
 * @returns {Result}
 */
function send(ctx) {
  const { safe } = ctx.term;
  const [to = '', ...words] = ctx.args;
  const content = words.join(' ');
  return withBroker(ctx, (b) => {
    const receipt = b.send(to, content);
    return {
      json: receipt,
      text: [`queued ${receipt.messageId} from ${safe(b.alias)} to ${safe(receipt.toAlias)}`],
    };
  });
}

/**
 * One message as a header line and its indented, escaped text.
 * @param {import('./terminal.js').Terminal} term
 * @param {Message} m
 */
function formatMessage({ safe, safeBlock }, m) {
  const room = m.roomId ? ` [room ${safe(m.roomId)}]` : '';
  return [
    `--- ${fmtTs(m.ts)}  from ${safe(m.fromAlias)} to ${safe(m.toAlias)}${room}  id ${safe(m.messageId)}`,
    safeBlock(m.content),
  ];
}

/**
 * `inbox [--peek]`: take (archive) or peek at the current session's messages.
 * @param {Context} ctx
 * @returns {Result}
 */
function inbox(ctx) {
  const { values, term } = ctx;
  return withBroker(ctx, (b) => {
    const msgs = values.peek ? b.peek() : b.drain();
    const verb = values.peek ? 'queued (peek; not consumed)' : 'taken (archived)';
    const text = msgs.length === 0
      ? ['inbox is empty']
      : [`${msgs.length} message(s) ${verb}:`, ...msgs.flatMap((m) => formatMessage(term, m))];
    return { json: msgs, text };
  });
}

/**
 * `held [list | accept <n|all> | drop <n|all>]` as the current session.
 * @param {Context} ctx
 * @returns {Result}
 */
function held(ctx) {
  const { safe, safeBlock } = ctx.term;
  const [action = 'list', which, ...extra] = ctx.args;
  if (!['list', 'accept', 'drop'].includes(action)) {
    throw usage(`unknown held action "${safe(action)}": held [list | accept <n|all> | drop <n|all>]`);
  }
  if (action === 'list' && which !== undefined) throw usage(`"held list" takes no arguments, got "${safe(which)}"`);
  if (action !== 'list' && (which === undefined || extra.length > 0)) throw usage(`usage: held ${action} <n|all>`);
  return withBroker(ctx, (b) => {
    if (action === 'list' || which === undefined) {
      const entries = b.held();
      const text = entries.length === 0
        ? ['no held messages']
        : [`${entries.length} held message(s) (release with \`held accept <n|all>\`, drop with \`held drop <n|all>\`):`,
          ...entries.flatMap((h) => [
            `[${h.index}] from ${safe(h.message.fromAlias)}  id ${safe(h.message.messageId)}  held ${fmtTs(h.heldAt)}  expires ${fmtTs(h.expiresAt)}  reason: ${safe(h.reason)}`,
            safeBlock(h.message.content),
          ])];
      return { json: entries, text };
    }
    let ids;
    try {
      ids = action === 'accept' ? b.releaseHeld(which) : b.dropHeld(which);
    } catch (e) {
      const code = /** @type {{ code?: unknown }} */ (e)?.code;
      if (code === 'E_INVALID_ARG') throw usage(`held ${action}: expected "all" or a number from 1, got "${safe(which)}"`, 'E_INVALID_ARG');
      if (code === 'E_NO_SUCH_HELD') {
        throw new CliError('E_NO_SUCH_HELD', `no held message number ${safe(which)}; list them with \`c2c-bridge held\``, EXIT_FAILED);
      }
      throw e;
    }
    const verb = action === 'accept' ? 'released' : 'dropped';
    const text = [`${verb} ${ids.length} held message(s)${action === 'accept' ? ' into the inbox' : '; the senders get "dropped" receipts'}`, ...ids.map((id) => `  ${safe(id)}`)];
    return { json: { action, [verb]: ids }, text };
  });
}

/**
 * `receipts [--limit N]`: outcomes of the messages the current session sent.
 * @param {Context} ctx
 * @returns {Result}
 */
function receipts(ctx) {
  const { safe } = ctx.term;
  const limit = ctx.values.limit === undefined ? 50 : Number(ctx.values.limit);
  return withBroker(ctx, (b) => {
    const list = b.receipts(limit);
    const text = list.length === 0
      ? ['no receipts']
      : list.map((r) => `${fmtTs(r.ts)}  ${safe(r.status).padEnd(12)}  to ${safe(r.toAlias)}  id ${safe(r.messageId)}${r.reason != null ? `  reason: ${safe(r.reason)}` : ''}`);
    return { json: list, text };
  });
}

/**
 * `rooms`: as the current session (c2c's listing rule, `joined`), or without one every room
 * of the root with its roster (`listRoomsAt`; `joined` is null: nobody is asking).
 * @param {Context} ctx
 * @returns {Result}
 */
function rooms(ctx) {
  const { addon, values, term: { safe } } = ctx;
  /** @type {Array<{ roomId: string, members: string[], joined: boolean | null, visibility: string }>} */
  let list;
  if (hasSession(values)) {
    list = withBroker(ctx, (b) => b.listRooms());
  } else {
    const loc = locateRoot(addon, values);
    list = loc.exists ? addon.listRoomsAt(loc.path).map((r) => ({ ...r, joined: null })) : [];
  }
  const text = list.length === 0
    ? ['no rooms']
    : list.map((r) => {
      const vis = r.visibility && r.visibility !== 'public' ? ` [${safe(r.visibility)}]` : '';
      return `${safe(r.roomId)}${r.joined ? ' (joined)' : ''}${vis}: ${r.members.length} member(s): ${r.members.map(safe).join(', ')}`;
    });
  return { json: list, text };
}

/**
 * `log [--limit N]`: the last N entries of broker.log.
 * @param {Context} ctx
 * @returns {Result}
 */
function log({ addon, values, term: { safe } }) {
  const loc = locateRoot(addon, values);
  const limit = values.limit === undefined ? 50 : Number(values.limit);
  const lines = loc.exists ? addon.readLog(loc.path, limit) : [];
  /** @type {Array<Record<string, unknown>>} */
  const entries = lines.map((l) => {
    try {
      return JSON.parse(l);
    } catch {
      return { unparsed: l };
    }
  });
  const text = entries.length === 0
    ? ['broker.log is empty']
    : entries.map((e) => {
      const { ts, event, ...rest } = e;
      const fields = Object.entries(rest).map(([k, v]) => `${safe(k)}=${safe(typeof v === 'string' ? v : JSON.stringify(v))}`);
      return `${fmtTs(ts)}  ${safe(event ?? '?')}  ${fields.join(' ')}`.trimEnd();
    });
  return { json: entries, text };
}

/**
 * `sweep`: remove dead registrations, dead-letter their mail. Without a session, through a
 * short-lived registration of this CLI process, removed again (with its empty inbox) before
 * exiting: the addon has no identity-free sweep.
 * @param {Context} ctx
 * @returns {Result}
 */
function sweep(ctx) {
  const { addon, values, term: { safe } } = ctx;
  let result;
  if (hasSession(values)) {
    result = withBroker(ctx, (b) => b.sweep());
  } else {
    const loc = locateRoot(addon, values);
    const sessionId = `c2c-bridge-cli-${process.pid}`;
    const b = addon.Broker.open({ sessionId, alias: sessionId, root: loc.path, clientType: 'c2c-bridge-cli' });
    try {
      result = b.sweep();
    } finally {
      b.close();
      removeEmptyInbox(addon, b.root, sessionId);
    }
  }
  const text = [`removed ${result.removed.length} dead registration(s), moved ${result.deadLettered} message(s) to dead-letter.jsonl, removed ${result.tempFilesRemoved} temp file(s) of killed writers`];
  for (const r of result.removed) text.push(`  removed ${safe(r.alias)} (${safe(r.sessionId)})`);
  return { json: result, text };
}

/**
 * Remove the CLI's own temporary inbox (and its lock) when the addon reads it as empty.
 * @param {import('./context.js').Addon} addon
 * @param {string} root
 * @param {string} sessionId
 */
function removeEmptyInbox(addon, root, sessionId) {
  const fs = require('node:fs');
  const path = require('node:path');
  try {
    const s = addon.inspectInbox(root, sessionId);
    if (s.messages === 0 && s.notMessages.length === 0 && s.notUnderstood === 0) {
      fs.rmSync(path.join(root, `${sessionId}.inbox.json`));
      fs.rmSync(path.join(root, `${sessionId}.inbox.lock`), { force: true });
    }
  } catch {
    /* nothing to tidy */
  }
}

module.exports = { peers, send, inbox, held, receipts, rooms, log, sweep };
