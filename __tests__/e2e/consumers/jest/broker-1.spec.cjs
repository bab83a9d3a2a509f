// Jest (CommonJS) consumer of the installed c2c-bridge, file 1 of 3.
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const { Broker } = require('c2c-bridge');

let root;
const open = [];
beforeEach(() => {
  root = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'c2c-jest-1-')), 'broker');
});
afterEach(() => {
  for (const b of open.splice(0)) b.close();
  fs.rmSync(path.dirname(root), { recursive: true, force: true });
});
const openAs = (alias) => {
  const b = Broker.open({ root, alias, sessionId: `ses_${alias}_1` });
  open.push(b);
  return b;
};

test('send then drain (1)', () => {
  const a = openAs('a1');
  const b = openAs('b1');
  const receipt = a.send('b1', 'hello 1');
  expect(receipt.status).toBe('queued');
  const got = b.drain();
  expect(got.map((m) => [m.fromAlias, m.content])).toEqual([['a1', 'hello 1']]);
  expect(b.drain()).toEqual([]);
});

test('watch sees a new message (1)', async () => {
  const a = openAs('wa1');
  const b = openAs('wb1');
  const changed = new Promise((resolve) => b.watch((change) => resolve(change)));
  a.send('wb1', 'watch me 1');
  const change = await changed;
  expect(change.sessionId).toBe('ses_wb1_1');
  expect(b.peek().map((m) => m.content)).toEqual(['watch me 1']);
  const ids = b.peek().map((m) => m.messageId);
  expect(b.ack(ids).acked).toEqual(ids);
  b.unwatch();
});

test('closed handles refuse work (1)', () => {
  const a = openAs('c1');
  a.close();
  let code;
  try {
    a.send('c1', 'x');
  } catch (e) {
    code = e.code;
  }
  expect(code).toBe('E_CLOSED');
});
