// @ts-check
// c2c-bridge CLI: the host-local verdict side channel (c2c's B098 exception for hook-based
// clients). `approval-reply` (alias `authorize`) is run by the human at this machine and
// writes `<root>/approval-verdict/<token>.json`; `await-reply` is run by a hook and reads ONLY
// that file — never an inbox, a room or any message — so no peer can produce a verdict.
//
// Contract with the dispatcher (bin/c2c-bridge.js):
//   approvalReply(argv, io) -> exit code (number)
//   awaitReply(argv, io)    -> Promise<exit code>
// `argv` is everything after the subcommand name (it may contain --root and --json);
// `io` is optional: { stdout, stderr } (objects with write(string); default the process
// streams) and `addon` (default: the package's binding.js). Neither function calls
// process.exit. Text output escapes peer-controlled strings with the CLI's one terminal
// helper (bin/lib/terminal.js); JSON output escapes the same characters as \uXXXX.
//
// Exit codes: 0 success (await-reply: a verdict was printed), 1 timeout (await-reply only)
// or a failed write, 2 bad input (usage, token, verdict, timeout) or an unusable root/file.
'use strict';

const { parseArgs } = require('node:util');
const { createTerminal } = require('./terminal.js');

const EXIT_OK = 0;
const EXIT_TIMEOUT = 1;
const EXIT_FAILED = 1;
const EXIT_BAD_INPUT = 2;

/** Default and maximum wait of await-reply, in seconds. */
const DEFAULT_TIMEOUT_S = 300;
const MAX_TIMEOUT_S = 24 * 3600;
/** How often await-reply looks at the file, in milliseconds. */
const POLL_MS = 100;

const TOKEN_RE = /^[A-Za-z0-9_-]{1,128}$/;

const HELP = `  approval-reply <token> allow|deny [--reason R]
                         Write the host-local verdict for <token> (approval-verdict/<token>.json,
                         0600). Alias: authorize.
  await-reply --token T [--timeout S]
                         Wait up to S seconds (default ${DEFAULT_TIMEOUT_S}) for the verdict file of T and
                         print it (exit 0); exit 1 on timeout, 2 on bad input. Reads only that
                         file, never an inbox.
`;

/** @typedef {typeof import('../../index.js')} Addon */
/** @typedef {{ write(text: string): unknown }} Writable */
/** @typedef {{ stdout?: Writable, stderr?: Writable, addon?: Addon }} Io */

/**
 * The streams, the addon (or why it cannot be loaded) and the terminal helper over it.
 * @param {Io} io
 */
function streams(io = {}) {
  /** @type {Addon | null} */
  let addon = io.addon ?? null;
  /** @type {unknown} */
  let loadError = null;
  if (!addon) {
    try {
      addon = require('../../binding.js');
    } catch (e) {
      loadError = e;
    }
  }
  return {
    out: io.stdout ?? process.stdout,
    err: io.stderr ?? process.stderr,
    addon,
    loadError,
    term: createTerminal(addon),
  };
}

/** @typedef {ReturnType<typeof streams>} Streams */

/**
 * The addon, or its load error thrown.
 * @param {Streams} s
 * @returns {Addon}
 */
function loadAddon(s) {
  if (s.addon) return s.addon;
  throw s.loadError;
}

/**
 * Print an error the way the rest of the CLI does and return `exit`.
 * @param {Streams} s
 * @param {boolean} json
 * @param {string} code
 * @param {string} message
 * @param {number} exit
 */
function fail(s, json, code, message, exit) {
  if (json) s.out.write(`${s.term.toJson({ error: { code, message } }, 0)}\n`);
  else s.err.write(`${code}: ${s.term.safe(message)}\n`);
  return exit;
}

/**
 * The addon error's `code` and `message`.
 * @param {unknown} e
 */
function errorOf(e) {
  const err = /** @type {{ code?: unknown, message?: unknown } | null} */ (e);
  return { code: typeof err?.code === 'string' ? err.code : 'E_FAILED', message: String(err?.message ?? e) };
}

/**
 * @param {string[]} argv
 * @param {import('node:util').ParseArgsConfig['options']} options
 */
function parse(argv, options) {
  return /** @type {{ values: { root?: string, json?: boolean, reason?: string, token?: string, timeout?: string }, positionals: string[] }} */ (parseArgs({
    args: argv,
    options: { ...options, root: { type: 'string' }, json: { type: 'boolean' } },
    allowPositionals: true,
    strict: true,
  }));
}

/**
 * @param {Addon} addon
 * @param {{ root?: unknown }} values
 */
function rootOf(addon, values) {
  return addon.resolveRoot(typeof values.root === 'string' ? values.root : null, null).path;
}

/** Exit code for an addon error: bad input or an unusable root/file is 2, else `other`. */
/**
 * @param {unknown} e
 * @param {number} other
 */
function addonExit(e, other) {
  return ['E_INVALID_ID', 'E_INVALID_OPTION', 'E_INVALID_ARG', 'E_ROOT_INSECURE', 'E_STORE_CORRUPT'].includes(errorOf(e).code)
    ? EXIT_BAD_INPUT
    : other;
}

/**
 * `approval-reply <token> allow|deny [--reason R] [--root DIR] [--json]` (alias `authorize`):
 * write the host-local verdict for <token>.
 */
/**
 * @param {string[]} argv
 * @param {Io} [io]
 * @returns {number}
 */
function approvalReply(argv, io = {}) {
  const s = streams(io);
  let values;
  let positionals;
  try {
    ({ values, positionals } = parse(argv, { reason: { type: 'string' } }));
  } catch (e) {
    return fail(s, argv.includes('--json'), 'E_USAGE', errorOf(e).message, EXIT_BAD_INPUT);
  }
  const json = Boolean(values.json);
  if (positionals.length !== 2) {
    return fail(s, json, 'E_USAGE', 'usage: approval-reply <token> allow|deny [--reason R]', EXIT_BAD_INPUT);
  }
  const [token, verdict] = positionals;
  if (!TOKEN_RE.test(token)) {
    return fail(s, json, 'E_INVALID_ID', `invalid token ${JSON.stringify(token)}: must be 1–128 characters of A–Z, a–z, 0–9, '_' and '-'`, EXIT_BAD_INPUT);
  }
  if (verdict !== 'allow' && verdict !== 'deny') {
    return fail(s, json, 'E_INVALID_OPTION', `verdict must be "allow" or "deny", not ${JSON.stringify(verdict)}`, EXIT_BAD_INPUT);
  }
  let file;
  try {
    const addon = loadAddon(s);
    file = addon.writeApprovalVerdict(rootOf(addon, values), token, verdict, values.reason ?? null);
  } catch (e) {
    return fail(s, json, errorOf(e).code, errorOf(e).message, addonExit(e, EXIT_FAILED));
  }
  if (json) s.out.write(`${s.term.toJson({ ok: true, token, verdict, reason: values.reason ?? null, file }, 0)}\n`);
  else s.out.write(`${verdict} recorded for ${token} (${s.term.safe(file)})\n`);
  return EXIT_OK;
}

/** @param {number} ms */
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * `await-reply --token T [--timeout S] [--root DIR] [--json]`: poll
 * `approval-verdict/<T>.json` until it exists (print it, exit 0) or S seconds pass (exit 1).
 */
/**
 * @param {string[]} argv
 * @param {Io} [io]
 * @returns {Promise<number>}
 */
async function awaitReply(argv, io = {}) {
  const s = streams(io);
  let values;
  let positionals;
  try {
    ({ values, positionals } = parse(argv, { token: { type: 'string' }, timeout: { type: 'string' } }));
  } catch (e) {
    return fail(s, argv.includes('--json'), 'E_USAGE', errorOf(e).message, EXIT_BAD_INPUT);
  }
  const json = Boolean(values.json);
  if (positionals.length > 0 || values.token === undefined) {
    return fail(s, json, 'E_USAGE', 'usage: await-reply --token T [--timeout S]', EXIT_BAD_INPUT);
  }
  const token = values.token;
  if (!TOKEN_RE.test(token)) {
    return fail(s, json, 'E_INVALID_ID', `invalid token ${JSON.stringify(token)}: must be 1–128 characters of A–Z, a–z, 0–9, '_' and '-'`, EXIT_BAD_INPUT);
  }
  const timeoutS = values.timeout === undefined ? DEFAULT_TIMEOUT_S : Number(values.timeout);
  if (values.timeout !== undefined && (values.timeout.trim() === '' || !Number.isFinite(timeoutS) || timeoutS < 0 || timeoutS > MAX_TIMEOUT_S)) {
    return fail(s, json, 'E_INVALID_OPTION', `--timeout must be a number of seconds from 0 to ${MAX_TIMEOUT_S}, not ${JSON.stringify(values.timeout)}`, EXIT_BAD_INPUT);
  }
  let addon;
  let root;
  try {
    addon = loadAddon(s);
    root = rootOf(addon, values);
  } catch (e) {
    return fail(s, json, errorOf(e).code, errorOf(e).message, EXIT_BAD_INPUT);
  }
  const deadline = Date.now() + timeoutS * 1000;
  for (;;) {
    let v;
    try {
      v = addon.readApprovalVerdict(root, token);
    } catch (e) {
      return fail(s, json, errorOf(e).code, errorOf(e).message, EXIT_BAD_INPUT);
    }
    if (v) {
      if (json) s.out.write(`${s.term.toJson({ token: v.token, verdict: v.verdict, reason: v.reason, ts: v.ts }, 0)}\n`);
      else s.out.write(`${v.verdict}\n${v.reason != null ? `reason: ${s.term.safe(v.reason)}\n` : ''}`);
      return EXIT_OK;
    }
    const left = deadline - Date.now();
    if (left <= 0) {
      return fail(s, json, 'E_TIMEOUT', `no verdict for token ${token} within ${timeoutS} s`, EXIT_TIMEOUT);
    }
    await sleep(Math.min(POLL_MS, left));
  }
}

module.exports = {
  approvalReply,
  authorize: approvalReply,
  awaitReply,
  /** @type {Record<string, (argv: string[], io?: Io) => number | Promise<number>>} */
  COMMANDS: { 'approval-reply': approvalReply, authorize: approvalReply, 'await-reply': awaitReply },
  HELP,
  EXIT_OK,
  EXIT_TIMEOUT,
  EXIT_BAD_INPUT,
};
