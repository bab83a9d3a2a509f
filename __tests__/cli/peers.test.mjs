// Covers: `c2c-bridge peers` in text and --json mode: liveness, the root hint, and the stale
// flag of OpenCode peers running another plugin version (the addon's isStalePlugin rule).
// threats.md families: Prompt injection (aliases and versions reaching a terminal are escaped).
import { describe, expect, test } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { deadPid, sid } from '../helpers/broker.mjs';
import { VERSION, json, RAW_CONTROL, cli, useCli } from './run.mjs';

const { fx, setup } = useCli();

describe('peers', () => {
  test('text and --json list registrations with liveness', async () => {
    const { root, a, b } = setup();
    fx.open({ root, sessionId: sid('g'), alias: 'ghost', pid: await deadPid() });
    const r = cli(['--root', root, 'peers']);
    expect(r.code).toBe(0);
    const lines = r.stdout.trim().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines.find((l) => l.includes('alice'))).toMatch(/^alive/);
    expect(lines.find((l) => l.includes('ghost'))).toMatch(/^dead/);
    expect(r.stdout).toContain(b.sessionId);
    const j = cli(['--root', root, '--json', 'peers']);
    expect(j.code).toBe(0);
    const peers = json(j);
    expect(peers.map((p) => [p.alias, p.alive]).sort()).toEqual([['alice', true], ['bob', true], ['ghost', false]]);
    expect(peers.find((p) => p.alias === 'alice').sessionId).toBe(a.sessionId);
  });

  test('honours C2C_MCP_BROKER_ROOT; a missing root from the environment is an empty list naming it, not created', () => {
    const { root } = setup();
    const r = cli(['--json', 'peers'], { C2C_MCP_BROKER_ROOT: root });
    expect(json(r).map((p) => p.alias).sort()).toEqual(['alice', 'bob']);
    const missing = path.join(fx.root(), 'absent');
    const m = cli(['peers'], { C2C_MCP_BROKER_ROOT: missing });
    expect(m.code).toBe(0);
    expect(m.stdout).toContain(`the broker root ${missing} does not exist yet`);
    expect(m.stdout).toContain('C2C_MCP_BROKER_ROOT');
    expect(fs.existsSync(missing)).toBe(false);
  });

  // Issue 18: a --root typo must not read as "no registrations" with exit 0.
  test.each(['peers', 'doctor', 'log', 'rooms', 'sweep'])('--root naming a missing directory: %s says so, exits 1, creates nothing', (command) => {
    const missing = path.join(fx.root(), 'typo');
    const t = cli(['--root', missing, command]);
    expect(t.code).toBe(1);
    expect(t.stderr).toContain(`E_NO_ROOT: --root ${missing}: no such directory`);
    const j = cli(['--root', missing, '--json', command]);
    expect([j.code, json(j).error.code]).toEqual([1, 'E_NO_ROOT']);
    expect(fs.existsSync(missing)).toBe(false);
  });

  test('aliases with terminal escapes (written by another tool) are escaped', () => {
    const root = fx.root();
    const evil = 'ev\u001b]0;pwned\u0007il\u001b[2J\r\u009b31m\u202e';
    fs.writeFileSync(path.join(root, 'registry.json'), JSON.stringify([{ session_id: 'x1', alias: evil, registered_at: 1 }]), { mode: 0o600 });
    const r = cli(['--root', root, 'peers']);
    expect(r.code).toBe(0);
    expect(r.stdout).not.toMatch(RAW_CONTROL);
    expect(r.stdout).toContain('ev\\e]0;pwned\\x07il\\e[2J\\r\\x9b31m\\u202e');
    const j = cli(['--root', root, '--json', 'peers']);
    expect(j.stdout).not.toMatch(RAW_CONTROL);
    expect(json(j)[0].alias).toBe(evil);
  });
});

describe('peers: stale plugin versions', () => {
  test('only OpenCode peers with a recorded version other than this package are stale', () => {
    const root = fx.root();
    fx.open({ root, sessionId: sid('o'), alias: 'old', pluginVersion: '0.0.1-old', clientType: 'opencode' });
    fx.open({ root, sessionId: sid('n'), alias: 'current', pluginVersion: VERSION, clientType: 'opencode' });
    fx.open({ root, sessionId: sid('u'), alias: 'unversioned', clientType: 'opencode' });
    fx.open({ root, sessionId: sid('c'), alias: 'claude', pluginVersion: '9.9.9', clientType: 'claude-code' });
    const j = cli(['--root', root, '--json', 'peers']);
    expect(j.code).toBe(0);
    expect(json(j).map((p) => [p.alias, p.stale]).sort()).toEqual([
      ['claude', false], ['current', false], ['old', true], ['unversioned', false],
    ]);
    const t = cli(['--root', root, 'peers']);
    expect(t.code).toBe(0);
    const line = (alias) => t.stdout.split('\n').find((l) => l.includes(`  ${alias}  `));
    expect(line('old')).toMatch(/plugin=0\.0\.1-old .*STALE \(plugin 0\.0\.1-old, this is /);
    expect(line('old')).toContain(`this is ${VERSION})`);
    for (const alias of ['current', 'unversioned', 'claude']) expect(line(alias)).not.toMatch(/STALE/);
    expect(line('unversioned')).toContain('plugin=-');
  });

  test('a plugin version with terminal escapes (written by another tool) is escaped', () => {
    const root = fx.root();
    const evil = '1.0\u001b[2J\u202e';
    fs.writeFileSync(path.join(root, 'registry.json'), JSON.stringify([
      { session_id: 'x1', alias: 'weird', registered_at: 1, client_type: 'opencode', plugin_version: evil },
    ]), { mode: 0o600 });
    const r = cli(['--root', root, 'peers']);
    expect(r.code).toBe(0);
    expect(r.stdout).not.toMatch(RAW_CONTROL);
    expect(r.stdout).toContain('STALE (plugin 1.0\\e[2J\\u202e');
    const j = cli(['--root', root, '--json', 'peers']);
    expect(j.stdout).not.toMatch(RAW_CONTROL);
    expect(json(j)[0]).toMatchObject({ pluginVersion: evil, stale: true });
  });
});
