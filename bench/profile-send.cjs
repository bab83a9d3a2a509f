// Helper for profiling `send` with strace (see bench/NOTES.md): opens two handles in a fresh
// root with N filler registrations and performs `count` send + peek/ack rounds.
'use strict';
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const addon = require('../index.js');
const [n = '10', count = '50', op = 'send'] = process.argv.slice(2);
const base = fs.mkdtempSync(path.join(process.env.BENCH_DIR ?? path.join(os.homedir(), '.cache'), 'c2c-prof-'));
const root = addon.checkRoot(base);
const stat = fs.readFileSync('/proc/self/stat', 'utf8');
const start = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[19]);
const regs = Array.from({ length: Number(n) - 2 }, (_, i) => ({ session_id: `ses_f${i}`, alias: `f-${i}`, pid: process.pid, pid_start_time: start, registered_at: Date.now() / 1000, client_type: 'opencode' }));
fs.writeFileSync(path.join(root, 'registry.json'), JSON.stringify(regs), { mode: 0o600 });
const a = addon.Broker.open({ sessionId: 'ses_a', alias: 'a', root, directory: root });
const b = addon.Broker.open({ sessionId: 'ses_b', alias: 'b', root, directory: root });
process.stderr.write('--- start ---\n');
fs.writeSync(2, `MARK-START\n`);
for (let i = 0; i < Number(count); i++) {
  if (op === 'send' || op === 'both') a.send('b', `m${i} ${'x'.repeat(200)}`);
  if (op === 'ack' || op === 'both') b.ack(b.peek().map((m) => m.messageId));
  if (op === 'send') b.ack(b.peek().map((m) => m.messageId));
  if (op === 'list') a.listPeers();
}
fs.writeSync(2, `MARK-END\n`);
a.close();
b.close();
fs.rmSync(base, { recursive: true, force: true });
