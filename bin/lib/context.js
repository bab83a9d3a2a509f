// @ts-check
// What every CLI command starts from: the addon, the broker root, and (for the commands that
// act as a session) an attached Broker handle.
'use strict';

const os = require('node:os');
const path = require('node:path');
const { CliError, EXIT_FAILED, usage } = require('./cli-error.js');

/** @typedef {typeof import('../../index.js')} Addon */
/** @typedef {import('../../index.js').Broker} Broker */
/** @typedef {import('../../index.js').RootLocation} RootLocation */
/** @typedef {import('./terminal.js').Terminal} Terminal */

/**
 * The parsed options (node:util parseArgs values of bin/c2c-bridge.js).
 * @typedef {{ root?: string, json?: boolean, 'session-id'?: string, alias?: string, peek?: boolean, limit?: string, reason?: string, token?: string, timeout?: string, help?: boolean, version?: boolean }} Values
 */

/**
 * What a command handler gets.
 * @typedef {object} Context
 * @property {Addon} addon the native addon
 * @property {Terminal} term the terminal helper (bin/lib/terminal.js)
 * @property {Values} values the options
 * @property {string[]} args the command's positional arguments
 */

/**
 * What a command handler returns: `json` for --json, `text` lines otherwise, and the exit code
 * (default 0).
 * @typedef {object} Result
 * @property {unknown} json
 * @property {string[]} text
 * @property {number} [exit]
 */

/**
 * The package's addon entry (binding.js), or the reason it cannot be loaded.
 * @returns {{ addon: Addon, error?: undefined } | { addon: null, error: string }}
 */
function loadAddon() {
  try {
    return { addon: require('../../binding.js') };
  } catch (e) {
    return { addon: null, error: e instanceof Error ? e.message : String(e) };
  }
}

/**
 * The broker root location (not created). A `--root` naming a directory that does not exist
 * is an error (E_NO_ROOT, exit 1): a typo must not read as "no registrations".
 * @param {Addon} addon
 * @param {Values} values
 * @returns {RootLocation}
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

/**
 * What the reader can do about an error the addon raised, in CLI words.
 * @type {Record<string, string>}
 */
const HINTS = {
  E_UNKNOWN_RECIPIENT: 'list the aliases with `c2c-bridge peers`',
  E_RECIPIENT_DEAD: 'see who is alive with `c2c-bridge peers`',
  E_NOT_REGISTERED: 'list the registered sessions with `c2c-bridge peers`; if the plugin sets `brokerRoot`, pass the same directory with --root',
};

/**
 * Said after "no registrations" when the root is c2c's per-repository default: the plugin may
 * use another root (its `brokerRoot` option), which the CLI cannot see.
 * @param {RootLocation} loc
 */
function rootHint(loc) {
  return loc.source === 'option' || loc.source === 'C2C_MCP_BROKER_ROOT'
    ? ''
    : '; if the plugin sets `brokerRoot`, pass the same directory with --root DIR (or set C2C_MCP_BROKER_ROOT)';
}

/**
 * Whether a session to act as is given (--session-id or C2C_MCP_SESSION_ID).
 * @param {Values} values
 */
function hasSession(values) {
  return (values['session-id'] ?? process.env.C2C_MCP_SESSION_ID ?? '') !== '';
}

/**
 * The session id to act as, or a usage error saying how to give one.
 * @param {Values} values
 */
function sessionIdOf(values) {
  const id = values['session-id'] ?? process.env.C2C_MCP_SESSION_ID;
  if (id === undefined || id === '') {
    throw usage('no session to act as: pass --session-id ID or set C2C_MCP_SESSION_ID', 'E_NO_SESSION');
  }
  return id;
}

/**
 * Attach to the current session's registration (never registers, never takes an alias).
 * @param {Addon} addon
 * @param {Values} values
 * @returns {Broker}
 */
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

/**
 * Run `fn` with the current session's broker, closing it afterwards.
 * @template T
 * @param {Context} ctx
 * @param {(broker: Broker) => T} fn
 * @returns {T}
 */
function withBroker(ctx, fn) {
  const broker = attach(ctx.addon, ctx.values);
  try {
    return fn(broker);
  } finally {
    broker.close();
  }
}

module.exports = { loadAddon, locateRoot, HINTS, rootHint, hasSession, sessionIdOf, attach, withBroker };
