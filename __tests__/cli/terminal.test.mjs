// Covers bin/lib/terminal.js, the CLI's one terminal helper: with the addon, the characters the
// model's frame escapes (controls, DEL, C1, bidi controls, Unicode format characters) are
// escaped and nothing else; without it (the addon failed to load) every character outside
// printable ASCII is. threats.md "Prompt injection": peer text reaching a terminal.
import { describe, expect, test } from 'vitest';
import { createRequire } from 'node:module';
import { addon } from '../helpers/broker.mjs';
import { RAW_CONTROL } from './run.mjs';

const require = createRequire(import.meta.url);
const { createTerminal, fmtTs } = require('../../bin/lib/terminal.js');

const EVIL = 'hi\u001b[2J \u202eevil\u202c tag\u{e0041} zw\u200b shy\u00ad bom\ufeff é 日本\nsecond line\r';

describe('with the addon', () => {
  const t = createTerminal(addon);
  test('safe: one line, every control and format character escaped, letters kept', () => {
    const s = t.safe(EVIL);
    expect(s).not.toMatch(RAW_CONTROL);
    expect(s).not.toMatch(/[\u200b\u00ad\ufeff\u{e0041}\n\r]/u);
    expect(s).toContain('é 日本');
    expect(s).toContain('\\e[2J');
    expect(s).toBe(addon.escapeForTerminal(EVIL, false));
    expect(t.safe(undefined)).toBe('');
    expect(t.safe(42)).toBe('42');
  });

  test('safeBlock: newlines kept, every line indented, so no line can pose as CLI output', () => {
    const b = t.safeBlock('one\n--- 2026-01-01  from admin\u202e', '  ');
    expect(b.split('\n')).toEqual(['  one', `  --- 2026-01-01  from admin${addon.escapeForTerminal('\u202e', false)}`]);
  });

  test('toJson: the same characters as \\uXXXX, still JSON with the same values', () => {
    const value = { content: EVIL, n: 1 };
    const j = t.toJson(value);
    expect(j).not.toMatch(/[\u001b\u202e\u200b\u00ad\ufeff]/);
    expect(JSON.parse(j)).toEqual(value);
    expect(t.toJson(value, 0)).not.toContain('\n');
    expect(JSON.parse(t.toJson(value, 0))).toEqual(value);
  });
});

describe('without the addon', () => {
  const t = createTerminal(null);
  test('everything outside printable ASCII is escaped: never less than with the addon', () => {
    expect(t.safe('é\u001b\n')).toBe('\\u00e9\\u001b\\u000a');
    expect(t.safeBlock('a\nb\u202e')).toBe('    a\n    b\\u202e');
    const j = t.toJson({ s: EVIL });
    expect(j).toMatch(/^[\x20-\x7e\n]*$/);
    expect(JSON.parse(j)).toEqual({ s: EVIL });
  });
});

test('fmtTs: epoch seconds as UTC to the second, ? for anything else', () => {
  expect(fmtTs(1796055331.988)).toBe('2026-11-30 16:15:31Z');
  expect([fmtTs(undefined), fmtTs('1'), fmtTs(Number.NaN)]).toEqual(['?', '?', '?']);
});
