// @ts-check
// The CLI's one terminal helper: every peer-controlled string (aliases, session ids, message
// text, log fields, reasons) reaches a terminal or a JSON reader only through here.
//
// The characters escaped are the addon's (`escapeForTerminal` / `escapeJsonText`, one
// definition in Rust, envelope.rs): controls, DEL, C1, and every Unicode format character
// (bidi controls, zero-width characters, tag characters, soft hyphen, BOM, …) — the same set
// the model's frame escapes. Only when the addon cannot be loaded (the CLI then fails with
// E_ADDON_LOAD, and usage errors are printed before that) is every character outside
// printable ASCII escaped instead: never less.
'use strict';

/** @typedef {Pick<typeof import('../../index.js'), 'escapeForTerminal' | 'escapeJsonText'>} Escaper */

/**
 * @typedef {object} Terminal
 * @property {(value: unknown) => string} safe
 *   One line of peer-controlled text: every control and format character escaped, newlines too.
 * @property {(value: unknown, indent?: string) => string} safeBlock
 *   Multi-line peer text: escaped as `safe` but keeping newlines, each line indented (default
 *   four spaces) so the text can never produce a line that looks like CLI output of its own.
 * @property {(value: unknown, space?: number) => string} toJson
 *   JSON for machines (`space`: indentation, default 2; 0 for one line), with the same
 *   characters escaped as `\uXXXX` (still valid JSON, the same values).
 */

/**
 * Every character outside printable ASCII as `\uXXXX` (UTF-16 units), newlines kept or escaped.
 * @param {string} text
 * @param {boolean} keepNewlines
 */
function asciiOnly(text, keepNewlines) {
  return text.replace(/[^\x20-\x7e]/g, (c) =>
    c === '\n' && keepNewlines ? '\n' : `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`);
}

/**
 * The terminal helper over `addon` (null: the ASCII-only fallback).
 * @param {Escaper | null} addon
 * @returns {Terminal}
 */
function createTerminal(addon) {
  /** @param {string} text @param {boolean} keepNewlines */
  const escape = (text, keepNewlines) =>
    addon ? addon.escapeForTerminal(text, keepNewlines) : asciiOnly(text, keepNewlines);
  return {
    safe: (value) => escape(String(value ?? ''), false),
    safeBlock: (value, indent = '    ') =>
      escape(String(value ?? ''), true)
        .split('\n')
        .map((l) => indent + l)
        .join('\n'),
    toJson: (value, space = 2) => {
      const json = JSON.stringify(value, null, space) ?? 'null';
      return addon ? addon.escapeJsonText(json) : asciiOnly(json, true);
    },
  };
}

/**
 * Epoch seconds as `YYYY-MM-DD HH:MM:SSZ` (UTC), `?` when not a finite number.
 * @param {unknown} ts
 */
function fmtTs(ts) {
  if (typeof ts !== 'number' || !Number.isFinite(ts)) return '?';
  return new Date(ts * 1000).toISOString().replace('T', ' ').replace(/\.\d+Z$/, 'Z');
}

module.exports = { createTerminal, fmtTs };
