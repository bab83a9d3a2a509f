// Covers: `c2c-bridge sweep` with and without a session: dead registrations removed, their mail
// dead-lettered, nothing of the CLI's own left behind.
import { describe, expect, test } from 'vitest';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { addon, RUNTIME, sid } from '../helpers/broker.mjs';
import { json, cli, useCli } from './run.mjs';

const { fx, setup } = useCli();

describe('sweep', () => {
  test('removes dead registrations and dead-letters their mail (text and --json)', async () => {
    const { root, a } = setup();
    const holder = fx.track(spawn(RUNTIME, ['-e', 'setInterval(()=>{},1000)'], { stdio: 'ignore' }));
    const dsid = sid('d');
    fx.open({ root, sessionId: dsid, alias: 'doomed', pid: holder.pid });
    a.send('doomed', 'm1');
    a.send('doomed', 'm2');
    holder.kill('SIGKILL');
    await new Promise((r) => holder.on('exit', r));
    // a copy of doomed's inbox left by a writer killed mid-replace, an hour old (pid 4194305
    // is past the kernel's pid_max: no process has it)
    const leftover = path.join(root, `${dsid}.inbox.json.tmp.4194305`);
    fs.writeFileSync(leftover, '[]', { mode: 0o600 });
    const hourAgo = new Date(Date.now() - 3600_000);
    fs.utimesSync(leftover, hourAgo, hourAgo);
    const j = cli(['--root', root, '--json', 'sweep']);
    expect(j.code).toBe(0);
    expect(json(j)).toEqual({ removed: [{ alias: 'doomed', sessionId: dsid }], deadLettered: 2, tempFilesRemoved: 1 });
    expect(fs.existsSync(leftover)).toBe(false);
    expect(fs.readFileSync(path.join(root, 'dead-letter.jsonl'), 'utf8').trim().split('\n')).toHaveLength(2);
    // the CLI left no registration or inbox of its own behind
    expect(addon.listRegistrations(root).map((r) => r.alias).sort()).toEqual(['alice', 'bob']);
    expect(fs.readdirSync(root).filter((f) => f.includes('c2c-bridge-cli'))).toEqual([]);
    const t = cli(['--root', root, '--session-id', a.sessionId, 'sweep']);
    expect(t.code).toBe(0);
    expect(t.stdout).toMatch(/removed 0 dead registration\(s\), moved 0 message\(s\) .*, removed 0 temp file\(s\)/);
  });
});
