#!/usr/bin/env node
// @ts-check
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
//
// Layout: this file parses the arguments and dispatches; bin/lib/ holds the rest —
// context.js (addon, root, attached session), terminal.js (the one escaping helper),
// commands.js (peers, send, inbox, held, receipts, rooms, log, sweep), doctor.js,
// approval.js (approval-reply, authorize, await-reply), cli-error.js (exit codes).
'use strict';

const { parseArgs } = require('node:util');

const approval = require('./lib/approval.js');
const commands = require('./lib/commands.js');
const { doctor } = require('./lib/doctor.js');
const { CliError, EXIT_FAILED, EXIT_OK, EXIT_USAGE, usage } = require('./lib/cli-error.js');
const { HINTS, loadAddon } = require('./lib/context.js');
const { createTerminal } = require('./lib/terminal.js');

/** @typedef {import('./lib/context.js').Values} Values */
/** @typedef {import('./lib/context.js').Context} Context */
/** @typedef {import('./lib/context.js').Result} Result */
/** @typedef {import('./lib/terminal.js').Terminal} Terminal */

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
  rooms                  List rooms and their members: as the current session (c2c's listing
                         rule) when one is given, else every room of the root.
  log [--limit N]        Show the last N (default 50) entries of broker.log.
  doctor                 Check the broker root: location and source, mode and owner, lock
                         health, registrations and liveness, queued messages per session,
                         dead letters. Exits 1 when a check fails.
  sweep                  Remove dead registrations and move their undelivered mail to
                         dead-letter.jsonl (a session that registers again gets it back).
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

// ---------------------------------------------------------------------------------------
// Arguments

/** @type {import('node:util').ParseArgsConfig['options']} */
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
  help: { type: 'boolean', short: 'h' },
  version: { type: 'boolean', short: 'V' },
};

/**
 * A command: how many arguments (min, max), which command options apply, the synopsis shown
 * when the number of arguments is wrong, and whether bin/lib/approval.js handles it.
 * @typedef {object} CommandSpec
 * @property {[number, number]} args
 * @property {string[]} options
 * @property {string} [synopsis]
 * @property {boolean} [approval]
 */

/** @type {Record<string, CommandSpec>} */
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
  // Host-local verdicts: handled by bin/lib/approval.js, which validates its own arguments.
  'approval-reply': { args: [0, Infinity], options: ['reason'], approval: true },
  authorize: { args: [0, Infinity], options: ['reason'], approval: true },
  'await-reply': { args: [0, Infinity], options: ['token', 'timeout'], approval: true },
};
/** @type {Array<keyof Values>} */
const COMMAND_OPTIONS = ['peek', 'limit', 'reason', 'token', 'timeout'];

/**
 * The options, the command and its arguments; usage errors (exit 2) for anything wrong.
 * @param {string[]} argv
 * @param {Terminal} term
 * @returns {{ values: Values, command: string | null, args: string[] }}
 */
function parse(argv, { safe }) {
  let parsed;
  try {
    parsed = parseArgs({ args: argv, options: OPTIONS, allowPositionals: true, strict: true });
  } catch (e) {
    throw usage(String(e instanceof Error ? e.message : e).replace(/\. To specify a positional argument.*$/s, '.'));
  }
  const values = /** @type {Values} */ (parsed.values);
  const { positionals } = parsed;
  if (values.help || values.version) return { values, command: null, args: [] };
  const [command, ...args] = positionals;
  if (!command) throw usage('no command given (see --help)');
  const spec = Object.hasOwn(COMMANDS, command) ? COMMANDS[command] : undefined;
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

/** @type {Record<string, (ctx: Context) => Result>} */
const HANDLERS = { ...commands, doctor };

/**
 * The argument list bin/lib/approval.js expects for `command`: its options (as --opt=value,
 * so a value starting with "-" stays a value), then `--` and the positionals.
 * @param {Values} values
 * @param {string[]} args
 */
function approvalArgv(values, args) {
  const out = [];
  for (const opt of /** @type {const} */ (['root', 'reason', 'token', 'timeout'])) {
    if (values[opt] !== undefined) out.push(`--${opt}=${values[opt]}`);
  }
  if (values.json) out.push('--json');
  return [...out, '--', ...args];
}

// ---------------------------------------------------------------------------------------

/**
 * Run the CLI; resolves with the exit code. Never throws.
 * @param {string[]} argv
 * @returns {Promise<number>}
 */
async function main(argv) {
  const wantsJson = argv.includes('--json');
  const loaded = loadAddon();
  const term = createTerminal(loaded.addon);
  /** @param {string} code @param {string} message @param {number} exit */
  const fail = (code, message, exit) => {
    if (wantsJson) process.stdout.write(`${term.toJson({ error: { code, message } })}\n`);
    else process.stderr.write(`c2c-bridge: ${term.safe(code)}: ${term.safe(message)}\n${exit === EXIT_USAGE ? 'Try `c2c-bridge --help`.\n' : ''}`);
    return exit;
  };
  try {
    const { values, command, args } = parse(argv, term);
    if (values.help) {
      process.stdout.write(HELP);
      return EXIT_OK;
    }
    const addon = loaded.addon;
    if (!addon) throw new CliError('E_ADDON_LOAD', `cannot load the native addon: ${loaded.error}`, EXIT_FAILED);
    if (values.version || command === null) {
      const pkg = /** @type {{ version: string }} */ (require('../package.json'));
      const out = { version: pkg.version, native: addon.nativeVersion() };
      process.stdout.write(values.json ? `${term.toJson(out)}\n` : `c2c-bridge ${out.version} (native core ${out.native})\n`);
      return EXIT_OK;
    }
    if (COMMANDS[command]?.approval) {
      // approval-reply / authorize return a number, await-reply a promise of one.
      return await approval.COMMANDS[command](approvalArgv(values, args), { addon });
    }
    const handler = HANDLERS[command];
    if (!handler) throw usage(`unknown command "${term.safe(command)}" (see --help)`);
    const result = handler({ addon, term, values, args });
    if (values.json) process.stdout.write(`${term.toJson(result.json)}\n`);
    else process.stdout.write(`${result.text.join('\n')}\n`);
    return result.exit ?? EXIT_OK;
  } catch (e) {
    if (e instanceof CliError) return fail(e.code, e.message, e.exit);
    const err = /** @type {{ code?: unknown, message?: unknown, stack?: unknown }} */ (e);
    if (err && typeof err.code === 'string' && err.code.startsWith('E_')) {
      const message = String(err.message);
      return fail(err.code, HINTS[err.code] ? `${message}; ${HINTS[err.code]}` : message, EXIT_FAILED);
    }
    return fail('E_INTERNAL', err && err.stack ? String(err.stack) : String(e), EXIT_FAILED);
  }
}

main(process.argv.slice(2)).then((code) => {
  process.exitCode = code;
});
