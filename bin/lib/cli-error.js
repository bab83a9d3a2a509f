// @ts-check
// Exit codes and the one error type of the CLI (bin/c2c-bridge.js and bin/lib/*).
'use strict';

/** Success. */
const EXIT_OK = 0;
/** The operation failed (the error code is printed). */
const EXIT_FAILED = 1;
/** Usage error: unknown command or option, missing argument, no session given. */
const EXIT_USAGE = 2;

/** An error that ends the CLI with `exit` and prints `code: message`. */
class CliError extends Error {
  /**
   * @param {string} code a stable `E_…` code
   * @param {string} message what happened, for a human
   * @param {number} exit the process exit code
   */
  constructor(code, message, exit) {
    super(message);
    this.code = code;
    this.exit = exit;
  }
}

/**
 * A usage error (exit 2).
 * @param {string} message
 * @param {string} [code] default `E_USAGE`
 */
const usage = (message, code = 'E_USAGE') => new CliError(code, message, EXIT_USAGE);

module.exports = { EXIT_OK, EXIT_FAILED, EXIT_USAGE, CliError, usage };
