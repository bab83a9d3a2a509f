// Covers: the CLI's usage, --help, --version and exit codes (0 ok, 1 failed, 2 usage), run as a
// subprocess. threats.md families: Prompt injection (arguments echoed in errors are escaped).
import { describe, expect, test } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { addon, REPO_DIR } from '../helpers/broker.mjs';
import { json, cli, useCli } from './run.mjs';

const { fx, setup } = useCli();

describe('usage and exit codes', () => {
  test('--help documents commands and exit codes (exit 0)', () => {
    const r = cli(['--help']);
    expect(r.code).toBe(0);
    for (const word of ['peers', 'send', 'inbox', 'rooms', 'log', 'doctor', 'sweep', '--json', '--root', '--session-id', 'C2C_MCP_SESSION_ID', 'Exit codes']) {
      expect(r.stdout).toContain(word);
    }
    expect(r.stdout).toMatch(/0\s+success/);
    expect(r.stdout).toMatch(/1\s+the operation failed/);
    expect(r.stdout).toMatch(/2\s+usage error/);
  });

  test('--version prints the package and native versions', () => {
    const r = cli(['--version', '--json']);
    expect(r.code).toBe(0);
    expect(json(r)).toEqual({ version: JSON.parse(fs.readFileSync(path.join(REPO_DIR, 'package.json'), 'utf8')).version, native: addon.nativeVersion() });
  });

  test.each([
    [[], 'no command'],
    [['frobnicate'], 'unknown command'],
    [['peers', '--bogus'], 'unknown option'],
    [['send', 'bob'], 'missing text'],
    [['peers', 'extra'], 'extra argument'],
    [['log', '--limit', 'abc'], 'bad --limit'],
    [['log', '--limit', '0'], 'zero --limit'],
    [['peers', '--peek'], 'option of another command'],
  ])('usage error exits 2: %j (%s)', (args) => {
    const root = fx.root();
    const r = cli(['--root', root, ...args]);
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/E_USAGE/);
    const j = cli(['--root', root, '--json', ...args]);
    expect(j.code).toBe(2);
    expect(json(j).error.code).toBe('E_USAGE');
    expect(typeof json(j).error.message).toBe('string');
  });

  test('send and inbox without a session are usage errors (exit 2) that say how to give one', () => {
    const { root, b } = setup();
    for (const args of [['send', 'bob', 'hi'], ['inbox'], ['inbox', '--peek']]) {
      const r = cli(['--root', root, ...args]);
      expect(r.code).toBe(2);
      expect(r.stderr).toMatch(/E_NO_SESSION/);
      expect(r.stderr).toMatch(/--session-id/);
      expect(r.stderr).toMatch(/C2C_MCP_SESSION_ID/);
      const j = cli(['--root', root, '--json', ...args]);
      expect(j.code).toBe(2);
      expect(json(j)).toEqual({ error: { code: 'E_NO_SESSION', message: expect.stringMatching(/C2C_MCP_SESSION_ID/) } });
    }
    expect(b.peek()).toEqual([]);
  });
});

describe('--help', () => {
  test('lists the new commands and their exit codes', () => {
    const r = cli(['--help']);
    expect(r.code).toBe(0);
    for (const word of ['approval-reply <token> allow|deny [--reason R]', 'authorize', 'await-reply --token T [--timeout S]',
      'held [list]', 'held accept <n|all>', 'held drop <n|all>', 'receipts [--limit N]', 'stale']) {
      expect(r.stdout).toContain(word);
    }
    expect(r.stdout).toMatch(/await-reply:\s+0 verdict printed, 1 timeout[^,]*, 2 bad input/);
    expect(r.stdout).toMatch(/approval-reply, authorize:\s+0 verdict written, 1 the write failed, 2 bad input/);
  });
});
