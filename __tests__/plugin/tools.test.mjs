// Covers plugin/src/tools.mts error text (issue 18): the model is told what it can do in its
// own words (peer_list), never JS API names, and the real core error names the root searched.
import { afterAll, expect, test } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { makeTools } from '../../plugin/dist/tools.mjs';

const addon = createRequire(import.meta.url)('../../index.js');
const root = fs.mkdtempSync(path.join(os.tmpdir(), 'c2c-tools-'));
fs.chmodSync(root, 0o700);
afterAll(() => fs.rmSync(root, { recursive: true, force: true }));

test('peer_send to an unknown alias names the root and points at peer_list', async () => {
  const me = addon.Broker.open({ sessionId: 'ses_tools_me', alias: 'me', root, directory: root });
  try {
    const sessions = { get: () => undefined, brokerFor: async () => me };
    const tools = makeTools(sessions, '0.0.0', async () => []);
    const err = await tools.peer_send.execute({ to: 'nobody', text: 'hi' }, { sessionID: 'ses_tools_me', messageID: 'msg_1' }).catch((e) => e);
    expect(err).toBeInstanceOf(Error);
    expect(err.message).toContain('E_UNKNOWN_RECIPIENT');
    expect(err.message).toContain(`in the broker root ${fs.realpathSync(root)}`);
    expect(err.message).toContain('Call peer_list');
    expect(err.message).not.toMatch(/listPeers|new handle/);
  } finally {
    me.close();
  }
});
