// Covers: `c2c-bridge log [--limit N]`: the last broker.log entries, text and --json.
import { describe, expect, test } from 'vitest';
import { json, cli, useCli } from './run.mjs';

const { setup } = useCli();

describe('log', () => {
  test('--limit N shows the last N broker.log entries (text and --json)', () => {
    const { root, a } = setup();
    const r1 = a.send('bob', 'logged 1');
    const r2 = a.send('bob', 'logged 2');
    const j = cli(['--root', root, '--json', 'log', '--limit', '2']);
    expect(j.code).toBe(0);
    const entries = json(j);
    expect(entries).toHaveLength(2);
    expect(entries.map((e) => [e.event, e.message_id])).toEqual([['dm_enqueue', r1.messageId], ['dm_enqueue', r2.messageId]]);
    const t = cli(['--root', root, 'log']);
    expect(t.code).toBe(0);
    expect(t.stdout).toMatch(/register\s+alias=alice/);
    expect(t.stdout).toContain(`message_id=${r2.messageId}`);
    expect(cli(['--root', root, 'log', '--limit', '1']).stdout.trim().split('\n')).toHaveLength(1);
  });
});
