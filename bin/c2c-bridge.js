#!/usr/bin/env node
// c2c-bridge operator CLI: a thin layer over the native addon (index.js).
//
// Identity: `send`, `inbox`, `held` and `receipts` act as the session named by --session-id or
// C2C_MCP_SESSION_ID, by attaching to that session's existing registration. The alias the
// message carries always comes from the registration; --alias is only a check against it.
//
// Terminal safety: aliases, session ids, message text and log fields are peer-controlled.
// Everything printed in text mode goes through `safe()` (control characters, DEL, C1 and
// bidi controls and every other Unicode format character escaped, by the addon's shared
// escapeForTerminal); --json output escapes the same characters as \uXXXX.
'use strict';

const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { parseArgs } = require('node:util');

const EXIT_OK = 0;
const EXIT_FAILED = 1;
const EXIT_USAGE = 2;

const approval = require('./lib/approval.js');

const HELP = `Usage: c2c-bridge [options] <command> [args]

Commands:
  peers                  List registrations of the broker root and whether each is alive.
                         OpenCode peers running another c2c-bridge plugin version than this
                         package are flagged stale.
  send <alias> <text>    Send a direct message as the current session.
  inbox [--peek]         Show the current session's inbox. Without --peek the messages are
                         taken and archived (c2c's drain); with --peek they stay queued.
  held [list]            List the current session's held inbox (messages kept back by the
                         inbound policy "hold"), numbered from 1.
  held accept <n|all>    Release held message n (or all) into the normal delivery path.
  held drop <n|all>      Drop held message n (or all); the senders get "dropped" receipts.
  receipts [--limit N]   The outcome of the last N (default 50) messages the current session
                         sent: delivered, held, refused, expired, dropped, duplicate,
                         rate_limited.
  rooms                  List rooms and their members.
  log [--limit N]        Show the last N (default 50) entries of broker.log.
  doctor                 Check the broker root: location and source, mode and owner, lock
                         health, registrations and liveness, queued messages per session,
                         dead letters. Exits 1 when a check fails.
  sweep                  Remove dead registrations and move their undelivered mail to
                         dead-letter.jsonl (a session that registers again gets it back).
  relay --url URL [--creds FILE] [--node NAME] [--provision] [--rate-burst N]
                         Connect this broker root to other machines through NATS JetStream
                         (see RELAY.md) until SIGINT/SIGTERM. Remote peers then appear in
                         "peers" as alias@node and "send alias@node ..." reaches them. While
                         another connector runs for the root on this machine, this one stands
                         by and takes over when it ends. --node defaults to the host name;
                         --provision creates the node's stream and the presence bucket when
                         missing (needs that permission on the server); --rate-burst sets
                         the receiving limit per remote node and local recipient (default 20
                         per 60 s, as for local mail).
  relay-setup --url URL [--creds FILE] <node>...
                         Operator step: create the streams of these nodes and the presence
                         bucket with credentials that may create streams (see RELAY.md).
${approval.HELP.replace(/\n$/, '')}
                         No message (DM, room, broadcast) can produce a verdict.

Options:
  --root DIR             Broker root (default: C2C_MCP_BROKER_ROOT, else c2c's per-repository
                         location under XDG_STATE_HOME or ~/.c2c).
  --session-id ID        The session to act as for send, inbox, held and receipts (default:
                         C2C_MCP_SESSION_ID). The session must already be registered; its
                         alias is used.
  --alias ALIAS          Refuse to act unless the session is registered under this alias
                         (a safety check; it never changes who the message is from).
  --json                 Machine-readable output, errors included:
                         {"error": {"code": "E_…", "message": "…"}} on stdout.
  --peek                 (inbox) Do not consume the messages.
  --limit N              (log, receipts) Number of entries, 1–10000.
  --reason R             (approval-reply) The operator's reason, stored with the verdict.
  --token T              (await-reply) The token whose verdict to wait for.
  --timeout S            (await-reply) Seconds to wait, 0–86400 (default 300).
  -h, --help             Show this help.
  -V, --version          Show the package and native core versions.

Exit codes:
  0  success
  1  the operation failed (the error code, e.g. E_UNKNOWN_RECIPIENT, is printed;
     E_NO_ROOT: --root names a directory that does not exist)
  2  usage error (unknown command or option, missing argument, no session given,
     E_INVALID_ARG for a held number that is not "all" or 1, 2, …)
  approval-reply, authorize:
     0 verdict written, 1 the write failed, 2 bad input (usage, token, verdict) or an
     unusable root
  await-reply:
     0 verdict printed, 1 timeout (no verdict within --timeout), 2 bad input (usage, token,
     --timeout) or an unusable root or verdict file
`;

/** An error that should end the CLI with `exit` and print `code: message`. */
class CliError extends Error {
  constructor(code, message, exit) {
    super(message);
    this.code = code;
    this.exit = exit;
  }
}
const usage = (message, code = 'E_USAGE') => new CliError(code, message, EXIT_USAGE);

// ---------------------------------------------------------------------------------------
// Output

// Peer text reaches the terminal only through the addon's escapeForTerminal / escapeJsonText:
// the same characters the model's frame escapes (controls and Unicode format characters, Cf:
// tag characters, zero-width characters, word joiner, BOM, soft hyphen, bidi controls, …),
// one definition in Rust (envelope.rs). Without the addon (it failed to load), every
// character outside printable ASCII is escaped instead: never less.
let escaper;
function loadEscaper() {
  if (escaper === undefined) {
    try {
      const a = require('../index.js');
      escaper = typeof a.escapeForTerminal === 'function' ? a : null;
    } catch {
      escaper = null;
    }
  }
  return escaper;
}
function strictEscape(text, keepNewlines) {
  return text.replace(/[^\x20-\x7e\n]|\n/g, (c) => {
    if (c === '\n') return keepNewlines ? '\n' : '\\n';
    const n = c.codePointAt(0);
    return `\\u${n.toString(16).padStart(4, '0')}`;
  });
}

/** One line of peer-controlled text: every control and format character escaped, newlines too. */
function safe(value) {
  const text = String(value ?? '');
  const e = loadEscaper();
  return e ? e.escapeForTerminal(text, false) : strictEscape(text, false);
}

/**
 * Multi-line peer text: escaped as `safe`, and each continuation line indented so the text can
 * never produce a line that looks like CLI output of its own.
 */
function safeBlock(value, indent = '    ') {
  const text = String(value ?? '');
  const e = loadEscaper();
  return (e ? e.escapeForTerminal(text, true) : strictEscape(text, true))
    .split('\n')
    .map((l) => indent + l)
    .join('\n');
}

/** JSON for machines, with the same characters escaped as \uXXXX (still valid JSON). */
function toJson(value) {
  const json = JSON.stringify(value, null, 2);
  const e = loadEscaper();
  return e ? e.escapeJsonText(json) : json.replace(/[^\x20-\x7e\n]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

function fmtTs(ts) {
  if (typeof ts !== 'number' || !Number.isFinite(ts)) return '?';
  return new Date(ts * 1000).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

// ---------------------------------------------------------------------------------------
// Arguments

const OPTIONS = {
  root: { type: 'string' },
  json: { type: 'boolean' },
  'session-id': { type: 'string' },
  alias: { type: 'string' },
  peek: { type: 'boolean' },
  limit: { type: 'string' },
  reason: { type: 'string' },
  token: { type: 'string' },
  timeout: { type: 'string' },
  url: { type: 'string' },
  creds: { type: 'string' },
  node: { type: 'string' },
  provision: { type: 'boolean' },
  'rate-burst': { type: 'string' },
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'V' },
};

// `synopsis` is shown when the number of arguments is wrong.
const COMMANDS = {
  peers: { args: [0, 0], options: [] },
  send: { args: [2, Infinity], options: [], synopsis: '<alias> <text>' },
  inbox: { args: [0, 0], options: ['peek'] },
  held: { args: [0, 2], options: [], synopsis: '[list | accept <n|all> | drop <n|all>]' },
  receipts: { args: [0, 0], options: ['limit'] },
  rooms: { args: [0, 0], options: [] },
  log: { args: [0, 0], options: ['limit'] },
  doctor: { args: [0, 0], options: [] },
  sweep: { args: [0, 0], options: [] },
  relay: { args: [0, 0], options: ['url', 'creds', 'node', 'provision', 'rate-burst'] },
  'relay-setup': { args: [1, Infinity], options: ['url', 'creds'], synopsis: '--url URL [--creds FILE] <node>...' },
  // Host-local verdicts: handled by bin/lib/approval.js, which validates its own arguments.
  'approval-reply': { args: [0, Infinity], options: ['reason'], approval: true },
  authorize: { args: [0, Infinity], options: ['reason'], approval: true },
  'await-reply': { args: [0, Infinity], options: ['token', 'timeout'], approval: true },
};
const COMMAND_OPTIONS = ['peek', 'limit', 'reason', 'token', 'timeout', 'url', 'creds', 'node', 'provision', 'rate-burst'];

function parse(argv) {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (e) {
    throw usage(e.message.replace(/\. To specify a positional argument.*$/s, '.'));
  }
  const { values, positionals } = parsed;
  if (values.help || values.version) return { values, command: null, args: [] };
  const [command, ...args] = positionals;
  if (!command) throw usage('no command given (see --help)');
  const spec = COMMANDS[command];
  if (!spec) throw usage(`unknown command "${safe(command)}" (see --help)`);
  const [min, max] = spec.args;
  if (args.length < min) throw usage(`"${command}" needs ${spec.synopsis ?? `${min} argument(s)`}`);
  if (args.length > max) {
    throw usage(max === 0
      ? `"${command}" takes no arguments, got "${safe(args[0])}"`
      : `too many arguments for "${command}": ${command} ${spec.synopsis}`);
  }
  for (const opt of COMMAND_OPTIONS) {
    if (values[opt] !== undefined && !spec.options.includes(opt)) {
      throw usage(`--${opt} does not apply to "${command}"`);
    }
  }
  if (values.limit !== undefined) {
    if (!/^\d+$/.test(values.limit) || Number(values.limit) < 1 || Number(values.limit) > 10000) {
      throw usage(`--limit must be an integer from 1 to 10000, got "${safe(values.limit)}"`);
    }
  }
  return { values, command, args };
}

// ---------------------------------------------------------------------------------------
// Addon access

function loadAddon() {
  try {
    return require('../binding.js');
  } catch (e) {
    throw new CliError('E_ADDON_LOAD', `cannot load the native addon: ${e.message}`, EXIT_FAILED);
  }
}

/**
 * The broker root location (not created). A `--root` naming a directory that does not
 * exist is an error (E_NO_ROOT, exit 1): a typo must not read as "no registrations".
 */
function locateRoot(addon, values) {
  // `~/…` as the plugin's `brokerRoot` option accepts it (a quoted `--root '~/x'` reaches us
  // unexpanded).
  const root = values.root !== undefined && /^~(\/|$)/.test(values.root) ? path.join(os.homedir(), values.root.slice(1)) : values.root;
  const loc = addon.resolveRoot(root ?? null, null);
  if (values.root !== undefined && !loc.exists) {
    throw new CliError('E_NO_ROOT', `--root ${values.root}: no such directory (${loc.path}); nothing was created`, EXIT_FAILED);
  }
  return loc;
}

/** What the reader can do about an error the addon raised, in CLI words. */
const HINTS = {
  E_UNKNOWN_RECIPIENT: 'list the aliases with `c2c-bridge peers`',
  E_RECIPIENT_DEAD: 'see who is alive with `c2c-bridge peers`',
  E_NOT_REGISTERED: 'list the registered sessions with `c2c-bridge peers`; if the plugin sets `brokerRoot`, pass the same directory with --root',
};

/**
 * Said after "no registrations" when the root is c2c's per-repository default: the plugin may
 * use another root (its `brokerRoot` option), which the CLI cannot see.
 */
function rootHint(loc) {
  return loc.source === 'option' || loc.source === 'C2C_MCP_BROKER_ROOT'
    ? ''
    : '; if the plugin sets `brokerRoot`, pass the same directory with --root DIR (or set C2C_MCP_BROKER_ROOT)';
}

/** The session id to act as, or a usage error saying how to give one. */
function sessionIdOf(values) {
  const id = values['session-id'] ?? process.env.C2C_MCP_SESSION_ID;
  if (id === undefined || id === '') {
    throw usage('no session to act as: pass --session-id ID or set C2C_MCP_SESSION_ID', 'E_NO_SESSION');
  }
  return id;
}

/** Attach to the current session's registration (never registers, never takes an alias). */
function attach(addon, values) {
  const sessionId = sessionIdOf(values);
  const loc = locateRoot(addon, values);
  if (!loc.exists) {
    throw new CliError('E_NOT_REGISTERED', `no broker root at ${loc.path} (${loc.reason}); session ${sessionId} is not registered`, EXIT_FAILED);
  }
  const broker = addon.Broker.open({ sessionId, root: loc.path, attach: true });
  if (values.alias !== undefined && broker.alias.toLowerCase() !== values.alias.toLowerCase()) {
    broker.close();
    throw new CliError(
      'E_ALIAS_MISMATCH',
      `session ${sessionId} is registered as "${broker.alias}", not "${values.alias}"`,
      EXIT_FAILED,
    );
  }
  return broker;
}

function withBroker(broker, fn) {
  try {
    return fn(broker);
  } finally {
    broker.close();
  }
}

// ---------------------------------------------------------------------------------------
// Commands. Each returns { json, text } (text: array of lines).

/** This package's version: what an up-to-date OpenCode peer records as its plugin version. */
function ownVersion() {
  return require('../package.json').version;
}

/**
 * An OpenCode peer whose registration records a plugin version other than this package's
 * (the same rule as the addon's framedPeerList: no recorded version, or another client
 * type, is never stale).
 */
function isStale(peer, version) {
  return peer.clientType === 'opencode' && typeof peer.pluginVersion === 'string' && peer.pluginVersion !== version;
}

function cmdPeers(addon, values) {
  const loc = locateRoot(addon, values);
  const version = ownVersion();
  const peers = (loc.exists ? addon.listRegistrations(loc.path) : []).map((p) => ({ ...p, stale: isStale(p, version) }));
  const text = peers.length === 0
    ? [loc.exists
      ? `no registrations in ${safe(loc.path)} (${safe(loc.reason)})${rootHint(loc)}`
      : `no registrations: the broker root ${safe(loc.path)} does not exist yet (${safe(loc.reason)})${rootHint(loc)}`]
    : peers.map((p) => {
      const stale = p.stale ? `  STALE (plugin ${safe(p.pluginVersion)}, this is ${version})` : '';
      return `${p.alive ? 'alive' : 'dead '}  ${safe(p.alias)}  ${safe(p.sessionId)}  pid=${p.pid ?? '-'}  client=${safe(p.clientType ?? '-')}  plugin=${safe(p.pluginVersion ?? '-')}  registered=${fmtTs(p.registeredAt)}${stale}`;
    });
  return { json: peers, text };
}

function cmdSend(addon, values, args) {
  const [to, ...words] = args;
  const content = words.join(' ');
  return withBroker(attach(addon, values), (b) => {
    const receipt = b.send(to, content);
    return {
      json: receipt,
      text: [`queued ${receipt.messageId} from ${safe(b.alias)} to ${safe(receipt.toAlias)}`],
    };
  });
}

function formatMessage(m) {
  const room = m.roomId ? ` [room ${safe(m.roomId)}]` : '';
  return [
    `--- ${fmtTs(m.ts)}  from ${safe(m.fromAlias)} to ${safe(m.toAlias)}${room}  id ${safe(m.messageId)}`,
    safeBlock(m.content),
  ];
}

function cmdInbox(addon, values) {
  return withBroker(attach(addon, values), (b) => {
    const msgs = values.peek ? b.peek() : b.drain();
    const verb = values.peek ? 'queued (peek; not consumed)' : 'taken (archived)';
    const text = msgs.length === 0
      ? ['inbox is empty']
      : [`${msgs.length} message(s) ${verb}:`, ...msgs.flatMap(formatMessage)];
    return { json: msgs, text };
  });
}

/** `held [list | accept <n|all> | drop <n|all>]` as the current session. */
function cmdHeld(addon, values, args) {
  const [action = 'list', which, ...extra] = args;
  if (!['list', 'accept', 'drop'].includes(action)) {
    throw usage(`unknown held action "${safe(action)}": held [list | accept <n|all> | drop <n|all>]`);
  }
  if (action === 'list' && which !== undefined) throw usage(`"held list" takes no arguments, got "${safe(which)}"`);
  if (action !== 'list' && (which === undefined || extra.length > 0)) throw usage(`usage: held ${action} <n|all>`);
  return withBroker(attach(addon, values), (b) => {
    if (action === 'list') {
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
      if (e && e.code === 'E_INVALID_ARG') throw usage(`held ${action}: expected "all" or a number from 1, got "${safe(which)}"`, 'E_INVALID_ARG');
      if (e && e.code === 'E_NO_SUCH_HELD') {
        throw new CliError('E_NO_SUCH_HELD', `no held message number ${safe(which)}; list them with \`c2c-bridge held\``, EXIT_FAILED);
      }
      throw e;
    }
    const verb = action === 'accept' ? 'released' : 'dropped';
    const text = [`${verb} ${ids.length} held message(s)${action === 'accept' ? ' into the inbox' : '; the senders get "dropped" receipts'}`, ...ids.map((id) => `  ${safe(id)}`)];
    return { json: { action, [verb]: ids }, text };
  });
}

/** `receipts [--limit N]`: outcomes of the messages the current session sent. */
function cmdReceipts(addon, values) {
  const limit = values.limit === undefined ? 50 : Number(values.limit);
  return withBroker(attach(addon, values), (b) => {
    const receipts = b.receipts(limit);
    const text = receipts.length === 0
      ? ['no receipts']
      : receipts.map((r) => `${fmtTs(r.ts)}  ${safe(r.status).padEnd(12)}  to ${safe(r.toAlias)}  id ${safe(r.messageId)}${r.reason != null ? `  reason: ${safe(r.reason)}` : ''}`);
    return { json: receipts, text };
  });
}

/** Read-only room listing straight from the root, used when no session is given. */
function roomsFromDisk(loc) {
  const dir = path.join(loc.path, 'rooms');
  let st;
  try {
    st = fs.lstatSync(dir);
  } catch {
    return [];
  }
  if (!st.isDirectory()) {
    throw new CliError('E_ROOT_INSECURE', `${dir} is a symlink or not a directory`, EXIT_FAILED);
  }
  const rooms = [];
  for (const name of fs.readdirSync(dir).sort()) {
    if (!/^[A-Za-z0-9_-]{1,64}$/.test(name)) continue;
    const roomDir = path.join(dir, name);
    if (!fs.lstatSync(roomDir).isDirectory()) continue;
    const file = path.join(roomDir, 'members.json');
    let members = [];
    try {
      const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
      try {
        const parsed = JSON.parse(fs.readFileSync(fd, 'utf8'));
        if (!Array.isArray(parsed)) throw new Error('not an array');
        members = parsed.map((m) => m && m.alias).filter((a) => typeof a === 'string');
      } finally {
        fs.closeSync(fd);
      }
    } catch (e) {
      if (e.code !== 'ENOENT') {
        throw new CliError('E_STORE_CORRUPT', `${file} cannot be read: ${e.message}`, EXIT_FAILED);
      }
    }
    rooms.push({ roomId: name, members, joined: null });
  }
  return rooms;
}

function cmdRooms(addon, values) {
  const hasSession = (values['session-id'] ?? process.env.C2C_MCP_SESSION_ID ?? '') !== '';
  let rooms;
  if (hasSession) {
    rooms = withBroker(attach(addon, values), (b) => b.listRooms());
  } else {
    const loc = locateRoot(addon, values);
    if (loc.exists) addon.checkRoot(loc.path);
    rooms = loc.exists ? roomsFromDisk(loc) : [];
  }
  const text = rooms.length === 0
    ? ['no rooms']
    : rooms.map((r) => {
      const vis = r.visibility && r.visibility !== 'public' ? ` [${safe(r.visibility)}]` : '';
      return `${safe(r.roomId)}${r.joined ? ' (joined)' : ''}${vis}: ${r.members.length} member(s): ${r.members.map(safe).join(', ')}`;
    });
  return { json: rooms, text };
}

function cmdLog(addon, values) {
  const loc = locateRoot(addon, values);
  const limit = values.limit === undefined ? 50 : Number(values.limit);
  const lines = loc.exists ? addon.readLog(loc.path, limit) : [];
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

/** Count the records of one inbox file without following a symlink. */
function inboxCount(file) {
  const st = fs.lstatSync(file);
  if (st.isSymbolicLink()) return { error: 'symlink (never followed)' };
  if (!st.isFile()) return { error: 'not a regular file' };
  const fd = fs.openSync(file, fs.constants.O_RDONLY | fs.constants.O_NOFOLLOW);
  try {
    const parsed = JSON.parse(fs.readFileSync(fd, 'utf8'));
    if (!Array.isArray(parsed)) return { error: 'not a JSON array' };
    return { messages: parsed.length, bytes: st.size };
  } catch (e) {
    return { error: `unreadable: ${e.message}` };
  } finally {
    fs.closeSync(fd);
  }
}

function cmdDoctor(addon, values) {
  const loc = locateRoot(addon, values);
  const report = {
    root: { path: loc.path, source: loc.source, exists: loc.exists, reason: loc.reason },
    permissions: null,
    lock: null,
    registrations: [],
    inboxes: [],
    deadLetter: { present: false, lines: 0 },
    problems: [],
  };
  const text = [
    `root: ${safe(loc.path)} (from ${loc.source})${loc.exists ? '' : ' — does not exist yet'}`,
    `  why: ${safe(loc.reason)}`,
  ];
  if (!loc.exists) {
    text.push('nothing to check: no session has registered in this root');
    return { json: report, text, exit: EXIT_OK };
  }

  const st = fs.statSync(loc.path);
  const uid = typeof process.getuid === 'function' ? process.getuid() : null;
  const perm = {
    mode: `0${(st.mode & 0o777).toString(8)}`,
    uid: st.uid,
    ownedByCurrentUser: uid === null ? null : st.uid === uid,
    ok: true,
    error: null,
  };
  try {
    addon.checkRoot(loc.path);
  } catch (e) {
    perm.ok = false;
    perm.error = { code: e.code, message: e.message };
    report.problems.push(`${e.code}: ${e.message}`);
  }
  report.permissions = perm;
  text.push(`permissions: mode ${perm.mode}, owner uid ${perm.uid}${perm.ownedByCurrentUser === false ? ' (not you)' : ''} — ${perm.ok ? 'ok' : `FAIL ${perm.error.code}: ${safe(perm.error.message)}`}`);
  if (perm.ok && (st.mode & 0o077) !== 0) {
    text.push('  note: group/others can read or list the root; c2c creates it 0700');
  }
  if (!perm.ok) return { json: report, text, exit: EXIT_FAILED };

  const lockFree = addon.probeLock(loc.path, 'registry.json', 200);
  report.lock = { file: 'registry.json.lock', free: lockFree };
  if (!lockFree) report.problems.push('registry.json.lock is held for more than 200 ms');
  text.push(`lock: registry.json.lock ${lockFree ? 'free' : 'HELD (another process holds it; see E_LOCK_TIMEOUT)'}`);

  try {
    report.registrations = addon.listRegistrations(loc.path);
  } catch (e) {
    report.problems.push(`registry.json: ${e.code}: ${e.message}`);
    text.push(`registrations: FAIL ${e.code}: ${safe(e.message)}`);
  }
  const regs = report.registrations;
  const dead = regs.filter((r) => !r.alive).length;
  text.push(`registrations: ${regs.length} (${regs.length - dead} alive, ${dead} dead${dead ? '; run `c2c-bridge sweep`' : ''})`);
  for (const r of regs) {
    text.push(`  ${r.alive ? 'alive' : 'dead '}  ${safe(r.alias)}  ${safe(r.sessionId)}  pid=${r.pid ?? '-'}`);
  }
  // Records that name an alias but cannot be read still hold it (fail closed): report them.
  report.unreadableRegistrations = [];
  try {
    report.unreadableRegistrations = addon.listUnreadableRegistrations(loc.path);
  } catch {
    // already reported above with the registrations
  }
  for (const u of report.unreadableRegistrations) {
    report.problems.push(`registry.json: unreadable registration for alias ${JSON.stringify(u.alias)} (${u.detail}); it keeps holding the alias until it is fixed or removed`);
    text.push(`  UNREADABLE  ${safe(u.alias)}  ${safe(u.sessionId ?? '-')}  ${safe(u.detail)}`);
  }

  const registered = new Set(regs.map((r) => r.sessionId));
  for (const name of fs.readdirSync(loc.path).sort()) {
    if (!name.endsWith('.inbox.json')) continue;
    const sessionId = name.slice(0, -'.inbox.json'.length);
    const entry = { sessionId, registered: registered.has(sessionId), ...inboxCount(path.join(loc.path, name)) };
    if (!entry.error) {
      // Record by record, as the broker reads it (Rust): what is delivered, by which id, and
      // what is not a message at all (left in place, never delivered: reported, not hidden).
      try {
        const s = addon.inspectInbox(loc.path, sessionId);
        Object.assign(entry, {
          messages: s.messages,
          derivedIds: s.derivedIds,
          notMessages: s.notMessages,
          notUnderstood: s.notUnderstood,
        });
        if (s.notMessages.length) {
          report.problems.push(`${name}: ${s.notMessages.length} record(s) that are not messages (never delivered): ${s.notMessages.join('; ')}`);
        }
        if (s.notUnderstood) report.problems.push(`${name}: ${s.notUnderstood} unreadable record(s), moved to quarantine/ by the next write`);
      } catch (e) {
        entry.error = `${e.code}: ${e.message}`;
      }
    }
    if (entry.error) report.problems.push(`${name}: ${entry.error}`);
    report.inboxes.push(entry);
  }
  text.push(`inboxes: ${report.inboxes.length}`);
  for (const i of report.inboxes) {
    let what = i.error ? `FAIL ${safe(i.error)}` : `${i.messages} message(s) queued`;
    if (!i.error && i.derivedIds) what += ` (${i.derivedIds} without message_id, delivered by derived id)`;
    if (!i.error && i.notMessages?.length) what += `; ${i.notMessages.length} record(s) NOT messages: ${i.notMessages.map(safe).join('; ')}`;
    if (!i.error && i.notUnderstood) what += `; ${i.notUnderstood} unreadable record(s)`;
    text.push(`  ${safe(i.sessionId)}: ${what}${i.registered ? '' : ' (no registration)'}`);
  }

  const dl = path.join(loc.path, 'dead-letter.jsonl');
  try {
    const dst = fs.lstatSync(dl);
    if (dst.isSymbolicLink()) {
      report.problems.push('dead-letter.jsonl is a symlink');
      report.deadLetter = { present: true, lines: null };
    } else {
      const lines = fs.readFileSync(dl, 'utf8').split('\n').filter((l) => l.trim()).length;
      report.deadLetter = { present: true, lines };
    }
  } catch (e) {
    if (e.code !== 'ENOENT') report.problems.push(`dead-letter.jsonl: ${e.message}`);
  }
  text.push(report.deadLetter.present
    ? `dead-letter.jsonl: present, ${report.deadLetter.lines ?? '?'} message(s) waiting for their sessions to return`
    : 'dead-letter.jsonl: absent');

  text.push(report.problems.length === 0 ? 'ok: no problems found' : `${report.problems.length} problem(s) found`);
  return { json: report, text, exit: report.problems.length === 0 ? EXIT_OK : EXIT_FAILED };
}

function cmdSweep(addon, values) {
  const hasSession = (values['session-id'] ?? process.env.C2C_MCP_SESSION_ID ?? '') !== '';
  let result;
  if (hasSession) {
    result = withBroker(attach(addon, values), (b) => b.sweep());
  } else {
    // No session: sweep through a short-lived registration of this CLI process, removed again
    // (with its empty inbox) before exiting. The addon has no identity-free sweep.
    const loc = locateRoot(addon, values);
    const sessionId = `c2c-bridge-cli-${process.pid}`;
    const b = addon.Broker.open({ sessionId, alias: sessionId, root: loc.path, clientType: 'c2c-bridge-cli' });
    try {
      result = b.sweep();
    } finally {
      b.close();
      const inbox = path.join(b.root, `${sessionId}.inbox.json`);
      try {
        if (fs.readFileSync(inbox, 'utf8').trim() === '[]') {
          fs.rmSync(inbox);
          fs.rmSync(path.join(b.root, `${sessionId}.inbox.lock`), { force: true });
        }
      } catch {
        /* nothing to tidy */
      }
    }
  }
  const text = [`removed ${result.removed.length} dead registration(s), moved ${result.deadLettered} message(s) to dead-letter.jsonl`];
  for (const r of result.removed) text.push(`  removed ${safe(r.alias)} (${safe(r.sessionId)})`);
  return { json: result, text };
}

/** The default relay node name: the host name reduced to the node charset. */
function defaultNode() {
  const n = os.hostname().split('.')[0].replace(/[^A-Za-z0-9_-]/g, '-').slice(0, 32);
  return n || 'node';
}

/**
 * `relay`: run the connector for the root until SIGINT/SIGTERM (or until it fails). While
 * another connector holds the root's lock (E_RELAY_BUSY), stand by and retry every 2 s.
 */
async function cmdRelay(addon, values) {
  if (!values.url) throw usage('relay needs --url nats://HOST:PORT');
  const loc = locateRoot(addon, values);
  const node = values.node ?? defaultNode();
  const options = { root: loc.path, url: values.url, creds: values.creds, node, provision: values.provision ?? false };
  if (values['rate-burst'] !== undefined) {
    if (!/^\d+$/.test(values['rate-burst']) || Number(values['rate-burst']) < 1) {
      throw usage(`--rate-burst must be a positive integer, got "${safe(values['rate-burst'])}"`);
    }
    options.rateBurst = Number(values['rate-burst']);
  }
  let stopping = false;
  const stopped = new Promise((resolve) => {
    const stop = () => {
      stopping = true;
      resolve();
    };
    process.once('SIGINT', stop);
    process.once('SIGTERM', stop);
  });
  let relay = null;
  let announced = false;
  while (!relay && !stopping) {
    try {
      relay = addon.Relay.start(options);
    } catch (e) {
      if (e && e.code !== 'E_RELAY_BUSY') throw e;
      if (!announced) process.stderr.write(`c2c-bridge relay: ${safe(e.message)}
`);
      announced = true;
      await Promise.race([stopped, new Promise((r) => setTimeout(r, 2000))]);
    }
  }
  if (!relay) return { json: { node, stopped: true }, text: ['relay: stopped while standing by'] };
  process.stderr.write(`c2c-bridge relay: node ${safe(node)} connected to ${safe(values.url.replace(/\/\/[^@/]*@/, '//'))} for ${safe(loc.path)}
`);
  let failed = null;
  await Promise.race([
    stopped,
    new Promise((resolve) => {
      const t = setInterval(() => {
        if (!relay.state().running) {
          failed = relay.state().lastError ?? 'the connector ended';
          clearInterval(t);
          resolve();
        }
      }, 1000);
      stopped.then(() => clearInterval(t));
    }),
  ]);
  let stopError = null;
  try {
    relay.stop();
  } catch (e) {
    stopError = e;
  }
  const state = relay.state();
  if (failed || stopError) throw new CliError('E_RELAY', String(failed ?? stopError.message), EXIT_FAILED);
  return {
    json: { node, ...state },
    text: [`relay stopped: sent ${state.sent}, received ${state.received}, rejected ${state.rejected}, errors ${state.errors}`],
  };
}

/** `relay-setup`: create the streams of the named nodes and the presence bucket. */
function cmdRelaySetup(addon, values, args) {
  if (!values.url) throw usage('relay-setup needs --url nats://HOST:PORT');
  addon.relayProvision(values.url, values.creds, args);
  return { json: { provisioned: args }, text: [`created (or found) the streams of ${args.map(safe).join(', ')} and the presence bucket`] };
}

const HANDLERS = {
  relay: cmdRelay,
  'relay-setup': cmdRelaySetup,
  peers: cmdPeers,
  send: cmdSend,
  inbox: cmdInbox,
  held: cmdHeld,
  receipts: cmdReceipts,
  rooms: cmdRooms,
  log: cmdLog,
  doctor: cmdDoctor,
  sweep: cmdSweep,
};

/**
 * The argument list bin/lib/approval.js expects for `command`: its options (as --opt=value,
 * so a value starting with "-" stays a value), then `--` and the positionals.
 */
function approvalArgv(values, args) {
  const out = [];
  for (const opt of ['root', 'reason', 'token', 'timeout']) {
    if (values[opt] !== undefined) out.push(`--${opt}=${values[opt]}`);
  }
  if (values.json) out.push('--json');
  return [...out, '--', ...args];
}

// ---------------------------------------------------------------------------------------

async function main(argv) {
  const wantsJson = argv.includes('--json');
  const fail = (code, message, exit) => {
    if (wantsJson) process.stdout.write(`${toJson({ error: { code, message } })}\n`);
    else process.stderr.write(`c2c-bridge: ${safe(code)}: ${safe(message)}\n${exit === EXIT_USAGE ? 'Try `c2c-bridge --help`.\n' : ''}`);
    return exit;
  };
  try {
    const { values, command, args } = parse(argv);
    if (values.help) {
      process.stdout.write(HELP);
      return EXIT_OK;
    }
    const addon = loadAddon();
    if (values.version) {
      const pkg = require('../package.json');
      const out = { version: pkg.version, native: addon.nativeVersion() };
      process.stdout.write(values.json ? `${toJson(out)}\n` : `c2c-bridge ${out.version} (native core ${out.native})\n`);
      return EXIT_OK;
    }
    if (COMMANDS[command].approval) {
      // approval-reply / authorize return a number, await-reply a promise of one.
      return await approval.COMMANDS[command](approvalArgv(values, args), { addon });
    }
    const result = await HANDLERS[command](addon, values, args);
    if (values.json) process.stdout.write(`${toJson(result.json)}\n`);
    else process.stdout.write(`${result.text.join('\n')}\n`);
    return result.exit ?? EXIT_OK;
  } catch (e) {
    if (e instanceof CliError) return fail(e.code, e.message, e.exit);
    if (e && typeof e.code === 'string' && e.code.startsWith('E_')) {
      return fail(e.code, HINTS[e.code] ? `${e.message}; ${HINTS[e.code]}` : e.message, EXIT_FAILED);
    }
    return fail('E_INTERNAL', e && e.stack ? e.stack : String(e), EXIT_FAILED);
  }
}

main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
