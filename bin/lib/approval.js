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
// streams) and `addon` (default: the package's index.js). Neither function calls
// process.exit.
//
// Exit codes: 0 success (await-reply: a verdict was printed), 1 timeout (await-reply only)
// or a failed write, 2 bad input (usage, token, verdict, timeout) or an unusable root/file.
'use strict';

const { parseArgs } = require('node:util');

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

// Control characters, DEL, C1 and bidi/line-separator controls are escaped in text output.
// eslint-disable-next-line no-control-regex
const UNSAFE = /[\u0000-\u001f\u007f-\u009f\u2028\u2029\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]/g;
const safe = (s) =>
  String(s).replace(UNSAFE, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);

function streams(io = {}) {
  return {
    out: io.stdout ?? process.stdout,
    err: io.stderr ?? process.stderr,
    addon: io.addon,
  };
}

function loadAddon(io) {
  if (io.addon) return io.addon;
  return require('../../binding.js');
}

/** Print an error the way the rest of the CLI does and return `exit`. */
function fail(s, json, code, message, exit) {
  if (json) s.out.write(`${JSON.stringify({ error: { code, message } })}\n`);
  else s.err.write(`${code}: ${safe(message)}\n`);
  return exit;
}

function parse(argv, options) {
  return parseArgs({
    args: argv,
    options: { ...options, root: { type: 'string' }, json: { type: 'boolean' } },
    allowPositionals: true,
    strict: true,
  });
}

function rootOf(addon, values) {
  return addon.resolveRoot(values.root ?? null, null).path;
}

/** Exit code for an addon error: bad input or an unusable root/file is 2, else `other`. */
function addonExit(e, other) {
  return ['E_INVALID_ID', 'E_INVALID_OPTION', 'E_INVALID_ARG', 'E_ROOT_INSECURE', 'E_STORE_CORRUPT'].includes(e.code)
    ? EXIT_BAD_INPUT
    : other;
}

/**
 * `approval-reply <token> allow|deny [--reason R] [--root DIR] [--json]` (alias `authorize`):
 * write the host-local verdict for <token>.
 */
function approvalReply(argv, io = {}) {
  const s = streams(io);
  let values;
  let positionals;
  try {
    ({ values, positionals } = parse(argv, { reason: { type: 'string' } }));
  } catch (e) {
    return fail(s, argv.includes('--json'), 'E_USAGE', e.message, EXIT_BAD_INPUT);
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
    return fail(s, json, e.code ?? 'E_FAILED', e.message, addonExit(e, EXIT_FAILED));
  }
  if (json) s.out.write(`${JSON.stringify({ ok: true, token, verdict, reason: values.reason ?? null, file })}\n`);
  else s.out.write(`${verdict} recorded for ${token} (${safe(file)})\n`);
  return EXIT_OK;
}

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

/**
 * `await-reply --token T [--timeout S] [--root DIR] [--json]`: poll
 * `approval-verdict/<T>.json` until it exists (print it, exit 0) or S seconds pass (exit 1).
 */
async function awaitReply(argv, io = {}) {
  const s = streams(io);
  let values;
  let positionals;
  try {
    ({ values, positionals } = parse(argv, { token: { type: 'string' }, timeout: { type: 'string' } }));
  } catch (e) {
    return fail(s, argv.includes('--json'), 'E_USAGE', e.message, EXIT_BAD_INPUT);
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
    return fail(s, json, e.code ?? 'E_FAILED', e.message, EXIT_BAD_INPUT);
  }
  const deadline = Date.now() + timeoutS * 1000;
  for (;;) {
    let v;
    try {
      v = addon.readApprovalVerdict(root, token);
    } catch (e) {
      return fail(s, json, e.code ?? 'E_FAILED', e.message, EXIT_BAD_INPUT);
    }
    if (v) {
      if (json) s.out.write(`${JSON.stringify({ token: v.token, verdict: v.verdict, reason: v.reason, ts: v.ts })}\n`);
      else s.out.write(`${v.verdict}\n${v.reason != null ? `reason: ${safe(v.reason)}\n` : ''}`);
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
  COMMANDS: { 'approval-reply': approvalReply, authorize: approvalReply, 'await-reply': awaitReply },
  HELP,
  EXIT_OK,
  EXIT_TIMEOUT,
  EXIT_BAD_INPUT,
};
