// Vitest (ESM, globals) consumer of the installed c2c-bridge, file 3 of 3.
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { Broker } from 'c2c-bridge';

let root;
const open = [];
beforeEach(() => {
  root = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'c2c-vitest-3-')), 'broker');
});
afterEach(() => {
  for (const b of open.splice(0)) b.close();
  fs.rmSync(path.dirname(root), { recursive: true, force: true });
});
const openAs = (alias) => {
  const b = Broker.open({ root, alias, sessionId: `ses_${alias}_3` });
  open.push(b);
  return b;
};

test('send then drain (3)', () => {
  const a = openAs('a3');
  const b = openAs('b3');
  const receipt = a.send('b3', 'hello 3');
  expect(receipt.status).toBe('queued');
  const got = b.drain();
  expect(got.map((m) => [m.fromAlias, m.content])).toEqual([['a3', 'hello 3']]);
  expect(b.drain()).toEqual([]);
});

test('watch sees a new message (3)', async () => {
  const a = openAs('wa3');
  const b = openAs('wb3');
  const changed = new Promise((resolve) => b.watch((change) => resolve(change)));
  a.send('wb3', 'watch me 3');
  const change = await changed;
  expect(change.sessionId).toBe('ses_wb3_3');
  expect(b.peek().map((m) => m.content)).toEqual(['watch me 3']);
  const ids = b.peek().map((m) => m.messageId);
  expect(b.ack(ids).acked).toEqual(ids);
  b.unwatch();
});

test('closed handles refuse work (3)', () => {
  const a = openAs('c3');
  a.close();
  let code;
  try {
    a.send('c3', 'x');
  } catch (e) {
    code = e.code;
  }
  expect(code).toBe('E_CLOSED');
});
