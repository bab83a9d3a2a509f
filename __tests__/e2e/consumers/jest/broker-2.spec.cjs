// Jest (CommonJS) consumer of the installed c2c-bridge, file 2 of 3.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Broker } = require('c2c-bridge');

let root;
const open = [];
beforeEach(() => {
  root = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'c2c-jest-2-')), 'broker');
});
afterEach(() => {
  for (const b of open.splice(0)) b.close();
  fs.rmSync(path.dirname(root), { recursive: true, force: true });
});
const openAs = (alias) => {
  const b = Broker.open({ root, alias, sessionId: `ses_${alias}_2` });
  open.push(b);
  return b;
};

test('send then drain (2)', () => {
  const a = openAs('a2');
  const b = openAs('b2');
  const receipt = a.send('b2', 'hello 2');
  expect(receipt.status).toBe('queued');
  const got = b.drain();
  expect(got.map((m) => [m.fromAlias, m.content])).toEqual([['a2', 'hello 2']]);
  expect(b.drain()).toEqual([]);
});

test('watch sees a new message (2)', async () => {
  const a = openAs('wa2');
  const b = openAs('wb2');
  const changed = new Promise((resolve) => b.watch((change) => resolve(change)));
  a.send('wb2', 'watch me 2');
  const change = await changed;
  expect(change.sessionId).toBe('ses_wb2_2');
  expect(b.peek().map((m) => m.content)).toEqual(['watch me 2']);
  const ids = b.peek().map((m) => m.messageId);
  expect(b.ack(ids).acked).toEqual(ids);
  b.unwatch();
});

test('closed handles refuse work (2)', () => {
  const a = openAs('c2');
  a.close();
  let code;
  try {
    a.send('c2', 'x');
  } catch (e) {
    code = e.code;
  }
  expect(code).toBe('E_CLOSED');
});
