// The permission decision through napi (issue 16): `PermissionGate.decide` as the plugin calls
// it, with the audit line, for a peer-triggered bash call and a peer-triggered edit, each paired
// in the same loop with a no-op napi call (the no-op's own p99 is what the machine adds: clock
// reads, preemption, GC). Used by bench/run.mjs; also runs on its own:
//
//   node bench/decision.mjs [--quick] [--addon path/to/x.node] [iterations]
//
// (`--addon`: measure another build of the addon, e.g. an A/B against a saved copy.)
// Times are reported, never asserted. Each figure carries min, median, p99, p99.9 and max.

import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';

const nowNs = () => process.hrtime.bigint();

/** Sorted-sample statistics in ms (the units of bench/lib.mjs), with p99.9. */
export function tailStats(samplesMs) {
  const s = [...samplesMs].sort((a, b) => a - b);
  const q = (p) => s[Math.min(s.length - 1, Math.max(0, Math.round((s.length - 1) * p)))];
  return { n: s.length, min: s[0], median: q(0.5), p90: q(0.9), p99: q(0.99), p999: q(0.999), max: s[s.length - 1] };
}

/**
 * Time `fn(i)` and a no-op napi call in the same loop (alternating, one sample each per
 * iteration), after `warmup` untimed rounds. Returns `{ stats, noop }` (ms).
 */
export function paired(addon, fn, { iterations, warmup }) {
  for (let i = 0; i < warmup; i++) {
    addon.noop();
    fn(-1 - i);
  }
  const a = new Array(iterations);
  const b = new Array(iterations);
  for (let i = 0; i < iterations; i++) {
    const t0 = nowNs();
    addon.noop();
    const t1 = nowNs();
    fn(i);
    const t2 = nowNs();
    b[i] = Number(t1 - t0) / 1e6;
    a[i] = Number(t2 - t1) / 1e6;
  }
  return { stats: tailStats(a), noop: tailStats(b) };
}

/**
 * The napi decision figures. `base`: a private directory for the broker root and the project.
 * Returns `[{ id, group, name, stats, baselineStats, goal, note }]` in bench/run.mjs's record
 * shape (`baselineStats`: the paired no-op).
 */
export function decisionFigures(addon, base, { iterations = 20_000, warmup = 500 } = {}) {
  const gateRoot = path.join(base, 'gate-root');
  fs.mkdirSync(gateRoot, { mode: 0o700, recursive: true });
  const proj = path.join(base, 'gate-project');
  fs.mkdirSync(path.join(proj, 'src'), { recursive: true });
  fs.writeFileSync(path.join(proj, 'src', 'a.ts'), 'export {}\n');
  const gate = new addon.PermissionGate({
    peerPermissions: 'allow',
    directory: proj,
    worktree: proj,
    brokerRoot: addon.checkRoot(gateRoot),
    startedAtMs: 0,
  });
  const t0 = Date.now() - 10_000_000;
  // 10 sessions created while the plugin watched (their whole history is in the index), then
  // 10,000 messages: a user message and its answer, per session in turn.
  for (let k = 0; k < 10; k++) gate.observe({ type: 'session.created', properties: { info: { id: `ses_bench${k}`, time: { created: t0 - 1000 } } } });
  const observeSamples = [];
  for (let k = 0; k < 10_000; k++) {
    const sid = `ses_bench${Math.floor(k / 2) % 10}`;
    const user = k % 2 === 0;
    const id = `msg_${String(k).padStart(8, '0')}`;
    const ev = {
      type: 'message.updated',
      properties: {
        info: user
          ? { id, sessionID: sid, role: 'user', time: { created: t0 + k * 100 } }
          : { id, sessionID: sid, role: 'assistant', parentID: `msg_${String(k - 1).padStart(8, '0')}`, time: { created: t0 + k * 100, completed: t0 + k * 100 + 50 }, finish: 'stop' },
      },
    };
    const t = nowNs();
    gate.observe(ev);
    observeSamples.push(Number(nowNs() - t) / 1e6);
  }
  // A streaming assistant text part (OpenCode publishes the whole part, text so far, on every
  // delta): 2,000 events whose text grows by 40 characters each (up to 80 KB), and a running
  // tool part with an edit's strings. The decoder reads none of that text.
  const partSamples = [];
  let text = '';
  for (let k = 0; k < 2_000; k++) {
    text += 'lorem ipsum dolor sit amet, consectetur ';
    const ev = k % 10 === 9
      ? { type: 'message.part.updated', properties: { part: { id: `prt_t${k}`, sessionID: 'ses_bench1', messageID: 'msg_00000003', type: 'tool', callID: `call_t${k}`, tool: 'edit', state: { status: 'running', input: { filePath: '/p/a.ts', oldString: text, newString: text + 'x' }, time: { start: t0 } } } } }
      : { type: 'message.part.updated', properties: { part: { id: 'prt_stream', sessionID: 'ses_bench1', messageID: 'msg_00000003', type: 'text', text, time: { start: t0 } }, delta: 'lorem ipsum dolor sit amet, consectetur ' } };
    const t = nowNs();
    gate.observe(ev);
    partSamples.push(Number(nowNs() - t) / 1e6);
  }
  // A peer-triggered turn in ses_bench0: an injected peer message, and the assistant step
  // asking 60 s after the last answer completed (the session is surely idle).
  const last = t0 + 10_001 * 100 + 60_000;
  gate.observe({ type: 'message.updated', properties: { info: { id: 'msg_peer', sessionID: 'ses_bench0', role: 'user', time: { created: last } } } });
  gate.observe({ type: 'message.part.updated', properties: { part: { id: 'prt_peer', sessionID: 'ses_bench0', messageID: 'msg_peer', type: 'text', text: 'x', synthetic: true, metadata: { peerMessage: { messageId: 'm1', from: 'peer', via: ['ses_x'] } } } } });
  gate.observe({ type: 'message.updated', properties: { info: { id: 'msg_step', sessionID: 'ses_bench0', role: 'assistant', parentID: 'msg_peer', time: { created: last + 10 } } } });

  const bashInput = { command: 'touch build/out.txt', description: 'x' };
  let r = 0;
  const bash = paired(addon, () => {
    const d = gate.decide('asked', { id: `per_bash_${r++}`, sessionID: 'ses_bench0', permission: 'bash', patterns: ['touch build/out.txt'], metadata: { command: 'touch build/out.txt' }, always: ['touch *'], tool: { messageID: 'msg_step', callID: 'call_1' } }, bashInput);
    if (d.action !== 'once') throw new Error(`unexpected decision ${JSON.stringify(d)}`);
  }, { iterations, warmup });
  const file = path.join(proj, 'src', 'a.ts');
  const editInput = { filePath: file, oldString: 'export {}', newString: 'export { x }' };
  let e = 0;
  const edit = paired(addon, () => {
    const d = gate.decide('asked', { id: `per_edit_${e++}`, sessionID: 'ses_bench0', permission: 'edit', patterns: ['src/a.ts'], metadata: { filepath: file, diff: '-export {}\n+export { x }\n' }, always: ['*'], tool: { messageID: 'msg_step', callID: 'call_2' } }, editInput);
    if (d.action !== 'once') throw new Error(`unexpected decision ${JSON.stringify(d)}`);
  }, { iterations, warmup });
  // The host's own tail at the edit decision's length: each decision interleaved with a JS
  // busy loop as long as the edit's median (no allocation, no call). An interrupted spin runs
  // over by the interruption, so its p99 is what this machine adds to any code that long.
  const spinNs = BigInt(Math.round(edit.stats.median * 1e6));
  const spins = new Array(iterations);
  const spunDecisions = new Array(iterations);
  // ... and a plain append of an audit line's size (400 B, `fs.writeSync`, no addon) to a file
  // beside broker.log: the floor of the line every decision writes, on this file system.
  const appends = new Array(iterations);
  const appendFd = fs.openSync(path.join(gateRoot, 'append-floor.log'), 'a', 0o600);
  const appendLine = Buffer.alloc(400, 0x78);
  appendLine[399] = 0x0a;
  for (let i = 0; i < iterations; i++) {
    const t0 = nowNs();
    const d = gate.decide('asked', { id: `per_spin_${i}`, sessionID: 'ses_bench0', permission: 'edit', patterns: ['src/a.ts'], metadata: { filepath: file, diff: '-export {}\n+export { x }\n' }, always: ['*'], tool: { messageID: 'msg_step', callID: 'call_3' } }, editInput);
    const t1 = nowNs();
    if (d.action !== 'once') throw new Error(`unexpected decision ${JSON.stringify(d)}`);
    const t2 = nowNs();
    while (nowNs() - t2 < spinNs);
    const t3 = nowNs();
    fs.writeSync(appendFd, appendLine);
    const t4 = nowNs();
    spins[i] = Number(t3 - t2) / 1e6;
    appends[i] = Number(t4 - t3) / 1e6;
    spunDecisions[i] = Number(t1 - t0) / 1e6;
  }
  fs.closeSync(appendFd);
  const spin = tailStats(spins);
  const append = tailStats(appends);
  const spunEdit = tailStats(spunDecisions);
  // every decision wrote its line (across rotations: c2c's 10 MiB limit is passed)
  let lines = 0;
  for (const f of fs.readdirSync(gateRoot).filter((n) => /^broker\.log(\.\d+)?$/.test(n))) {
    lines += fs.readFileSync(path.join(gateRoot, f), 'utf8').split('\n').filter((l) => l.includes('"permission_decision"')).length;
  }
  const expected = 2 * (iterations + warmup) + iterations;
  if (lines !== expected) throw new Error(`broker.log holds ${lines} permission_decision lines, expected ${expected}`);
  const note = `paired no-op napi in the same loop: median ${fmtUs(bash.noop.median)}, p99 ${fmtUs(bash.noop.p99)}, p99.9 ${fmtUs(bash.noop.p999)}; p99.9 ${fmtUs(bash.stats.p999)}`;
  return [
    { id: 'gate.observe', group: 'decision', name: 'PermissionGate.observe (one message.updated event)', stats: tailStats(observeSamples), baseline: 'noop', baselineStats: bash.noop },
    { id: 'gate.observe.part', group: 'decision', name: 'PermissionGate.observe (streaming message.part.updated: text part growing to 80 KB, every 10th a running edit tool part)', stats: tailStats(partSamples), baseline: 'noop', baselineStats: bash.noop },
    { id: 'gate.decide', group: 'decision', name: 'PermissionGate.decide (peer bash, walk + guardrail + audit line) [napi]', stats: bash.stats, baseline: 'noop', baselineStats: bash.noop, goal: { text: '≤ 30 µs p99 (2× the Rust bash goal)', ok: (st) => st.p99 <= 0.03 }, note: `includes the FFI conversion and the broker.log line; ${note}` },
    { id: 'gate.decide.edit', group: 'decision', name: 'PermissionGate.decide (peer edit, walk + guardrail + audit line) [napi]', stats: edit.stats, baseline: 'noop', baselineStats: edit.noop, goal: { text: '≤ 10 µs p99 (2× the Rust edit goal)', ok: (st) => st.p99 <= 0.01 }, note: `includes the FFI conversion and the broker.log line; paired no-op p99 ${fmtUs(edit.noop.p99)}; p99.9 ${fmtUs(edit.stats.p999)}` },
    { id: 'gate.decide.edit.spun', group: 'decision', name: 'PermissionGate.decide (peer edit) in the spin\'s loop [napi]', stats: spunEdit, baseline: 'noop', baselineStats: edit.noop, note: 'the same decision, each followed by the spin below' },
    { id: 'machine.spin.edit', group: 'decision', name: 'machine: a JS spin of the napi edit decision\'s median, interleaved with it', stats: spin, baseline: 'noop', baselineStats: edit.noop, note: 'no allocation, no call: its tail over its median is what this host adds to code that long' },
    { id: 'machine.append', group: 'decision', name: 'machine: a 400-byte append (fs.writeSync, no addon) beside broker.log, interleaved with them', stats: append, baseline: 'noop', baselineStats: edit.noop, note: 'the floor of the audit line each decision writes: about one append in ten starts a new page of the file' },
  ];
}

function fmtUs(ms) {
  return `${(ms * 1000).toFixed(2)} µs`;
}

// ---- standalone ------------------------------------------------------------------------------
if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const require = createRequire(import.meta.url);
  const at = process.argv.indexOf('--addon');
  const addon = at > 0 ? require(path.resolve(process.argv[at + 1])) : require('../index.js');
  const quick = process.argv.includes('--quick');
  const n = Number(process.argv.slice(2).find((a, k, all) => /^\d+$/.test(a) && all[k - 1] !== '--addon') ?? (quick ? 1000 : 20_000));
  const parent = process.env.BENCH_DIR ?? path.join(os.homedir(), '.cache');
  fs.mkdirSync(parent, { recursive: true });
  const base = fs.mkdtempSync(path.join(parent, 'c2c-bench-decision-'));
  fs.chmodSync(base, 0o700);
  try {
    console.log(`load ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}; native ${addon.nativeVersion()}; ${n} samples`);
    for (const f of decisionFigures(addon, base, { iterations: n, warmup: Math.min(500, n) })) {
      const s = f.stats;
      const b = f.baselineStats;
      console.log(`${f.name}\n  median ${fmtUs(s.median)}  p99 ${fmtUs(s.p99)}  p99.9 ${fmtUs(s.p999)}  max ${fmtUs(s.max)}` +
        (b ? `   | paired no-op: median ${fmtUs(b.median)} p99 ${fmtUs(b.p99)} p99.9 ${fmtUs(b.p999)}` : '') +
        (f.goal ? `   goal ${f.goal.text}: ${f.goal.ok(s) ? 'meets' : 'MISSES'}` : ''));
    }
    console.log(`load ${os.loadavg().map((x) => x.toFixed(2)).join(' ')}`);
  } finally {
    fs.rmSync(base, { recursive: true, force: true });
  }
}
