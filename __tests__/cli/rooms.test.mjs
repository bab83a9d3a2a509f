// Covers: `c2c-bridge rooms` with a session (c2c's listing rule) and without one (every room of
// the root, from the addon's listRoomsAt), text and --json.
import { describe, expect, test } from 'vitest';
import fs from 'node:fs';
import path from 'node:path';
import { json, cli, useCli } from './run.mjs';

const { fx, setup } = useCli();

describe('rooms', () => {
  test('lists rooms and members with and without a session (text and --json)', () => {
    const { root, a, b } = setup();
    a.joinRoom('dev');
    b.joinRoom('dev');
    a.joinRoom('solo');
    const r = cli(['--root', root, 'rooms']);
    expect(r.code).toBe(0);
    expect(r.stdout).toMatch(/^dev: 2 member\(s\): alice, bob$/m);
    expect(r.stdout).toMatch(/^solo: 1 member\(s\): alice$/m);
    const j = json(cli(['--root', root, '--json', 'rooms']));
    expect(j.map((x) => [x.roomId, x.members.sort()])).toEqual([['dev', ['alice', 'bob']], ['solo', ['alice']]]);
    const mine = json(cli(['--root', root, '--json', '--session-id', b.sessionId, 'rooms']));
    expect(mine.map((x) => [x.roomId, x.joined])).toEqual([['dev', true], ['solo', false]]);
    const t = cli(['--root', root, '--session-id', b.sessionId, 'rooms']);
    expect(t.stdout).toMatch(/^dev \(joined\): 2 member\(s\)/m);
    // an invite-only room: marked for its members, not listed to others (c2c's rule)
    b.createRoom('ops', { visibility: 'invite_only' });
    const ops = cli(['--root', root, '--session-id', b.sessionId, 'rooms']);
    expect(ops.stdout).toMatch(/^ops \(joined\) \[invite_only\]: 1 member\(s\): bob$/m);
    const other = json(cli(['--root', root, '--json', '--session-id', a.sessionId, 'rooms']));
    expect(other.map((x) => x.roomId)).toEqual(['dev', 'solo']);
  });

  test('an empty root has no rooms', () => {
    const root = fx.root();
    const r = cli(['--root', root, 'rooms']);
    expect([r.code, r.stdout.trim()]).toEqual([0, 'no rooms']);
    expect(json(cli(['--root', root, '--json', 'rooms']))).toEqual([]);
  });

  test('without a session the operator sees every room with its roster (invite-only marked), joined null', () => {
    const { root, a, b } = setup();
    a.joinRoom('dev');
    b.createRoom('ops', { visibility: 'invite_only' });
    const j = json(cli(['--root', root, '--json', 'rooms']));
    expect(j).toEqual([
      { roomId: 'dev', members: ['alice'], joined: null, visibility: 'public' },
      { roomId: 'ops', members: ['bob'], joined: null, visibility: 'invite_only' },
    ]);
    expect(cli(['--root', root, 'rooms']).stdout).toMatch(/^ops \[invite_only\]: 1 member\(s\): bob$/m);
  });

  test('a rooms directory replaced by a symlink is refused (E_ROOT_INSECURE), not followed', () => {
    const { root, a } = setup();
    a.joinRoom('dev');
    const elsewhere = fx.root();
    fs.renameSync(path.join(root, 'rooms'), path.join(elsewhere, 'rooms'));
    fs.symlinkSync(path.join(elsewhere, 'rooms'), path.join(root, 'rooms'));
    const r = cli(['--root', root, '--json', 'rooms']);
    expect(r.code).toBe(1);
    expect(json(r).error.code).toBe('E_ROOT_INSECURE');
  });
});
