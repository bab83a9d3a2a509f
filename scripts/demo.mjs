// `npm run demo`: two real OpenCode sessions talk through c2c-bridge, shown step by step.
//
//   node scripts/demo.mjs [--timeout <seconds>] [--keep]
//
// Builds the addon and the plugin (scripts/ensure-built.mjs), starts a scripted mock model and two
// `opencode serve` instances (alice and bob, two project dirs, one temp broker root), then:
// alice's model asks bob a question with `peer_send`, bob's session receives it as a framed
// peer message and its model answers with `peer_send`, alice's model acknowledges the answer.
// Prints both transcripts, the broker root's files and timings, and stops everything.
// Exit 0 on success, 1 if the scenario did not complete (timeout or error), 130 on Ctrl-C.
// --keep leaves the broker root and OpenCode temp dirs in place (their paths are printed).
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { createRequire } from 'node:module';
import { ensureBuilt, REPO_ROOT } from './ensure-built.mjs';
import { client, startMockModel, startOpencode, waitFor } from '../__tests__/e2e/harness/index.mjs';

// ── options and output ────────────────────────────────────────────────────────────────────────
const argv = process.argv.slice(2);
const opt = (name) => {
  const i = argv.indexOf(name);
  return i >= 0 ? argv[i + 1] : undefined;
};
const TIMEOUT_MS = Number(opt('--timeout') ?? 120) * 1000;
const KEEP = argv.includes('--keep');

const color = process.stdout.isTTY && !process.env.NO_COLOR;
const sgr = (code) => (s) => (color ? `\x1b[${code}m${s}\x1b[0m` : String(s));
const bold = sgr('1');
const dim = sgr('2');
const cyan = sgr('36');
const green = sgr('32');
const red = sgr('31');
const yellow = sgr('33');

const T0 = Date.now();
const since = () => `${((Date.now() - T0) / 1000).toFixed(1).padStart(5)} s`;
const out = (s = '') => process.stdout.write(`${s}\n`);
const heading = (s) => out(`\n${bold(cyan(`== ${s} ${'='.repeat(Math.max(0, 90 - s.length))}`))}`);
const sub = (s) => out(`\n${bold(`-- ${s}`)}`);
const step = (s) => out(`${dim(`[${since()}]`)} ${s}`);
/** Indent every line of `text` by `n` spaces. */
const indent = (text, n) =>
  String(text)
    .split('\n')
    .map((l) => ' '.repeat(n) + l)
    .join('\n');
const clock = (ms) => (typeof ms === 'number' ? new Date(ms).toISOString().slice(11, 23) : '?');

// ── state to clean up ─────────────────────────────────────────────────────────────────────────
/** @type {any} */ let mock;
/** @type {any[]} */ const servers = [];
let tmp = '';
let cleaning = /** @type {Promise<void>|null} */ (null);
function cleanup() {
  return (cleaning ??= (async () => {
    await Promise.allSettled(servers.map((s) => s.stop()));
    await mock?.stop().catch(() => {});
    if (tmp && !KEEP) fs.rmSync(tmp, { recursive: true, force: true });
  })());
}
let interrupted = false;
for (const sig of ['SIGINT', 'SIGTERM']) {
  process.on(sig, () => {
    if (interrupted) process.exit(130);
    interrupted = true;
    out(`\n${yellow(`${sig}: stopping everything…`)}`);
    cleanup().finally(() => process.exit(130));
  });
}

// ── the scenario ──────────────────────────────────────────────────────────────────────────────
const QUESTION = 'What is 6*7? Answer with peer_send.';
const ANSWER = '42';

/** The mock model's script: decides each reply from what the request contains. */
function script(r) {
  const text = r.lastUserText;
  if (r.instance === 'alice') {
    if (r.lastIsToolResult) return { text: 'I sent bob the question; waiting for his answer.' };
    if (text.includes('ask bob')) return { toolCalls: [{ name: 'peer_send', arguments: { to: 'bob', text: QUESTION } }] };
    if (text.includes('[c2c-frame')) return { text: `bob answered ${ANSWER}. Thanks, bob — done.` };
  }
  if (r.instance === 'bob') {
    if (r.lastIsToolResult) return { text: 'I answered alice.' };
    if (text.includes('[c2c-frame') && text.includes('What is 6*7?')) {
      return { toolCalls: [{ name: 'peer_send', arguments: { to: 'alice', text: ANSWER } }] };
    }
  }
  return { text: `(unscripted) ${text.slice(0, 60)}` };
}

/** Peer-message parts of a transcript. */
const peerParts = (msgs) =>
  msgs.filter((m) => m.info.role === 'user').flatMap((m) => m.parts.filter((p) => p.type === 'text' && p.metadata?.peerMessage));

/** A transcript (`GET /session/:id/message`) in readable form. */
function printTranscript(name, sid, msgs) {
  sub(`transcript of ${name} (${sid}), ${msgs.length} messages`);
  msgs.forEach((m, i) => {
    const info = m.info;
    const marks = [];
    const peer = m.parts.find((p) => p.metadata?.peerMessage)?.metadata.peerMessage;
    if (peer) marks.push(yellow(`peer message from ${peer.from}`));
    if (info.role === 'assistant') {
      if (info.finish) marks.push(`finish=${info.finish}`);
      if (info.parentID) marks.push(`parent=${info.parentID}`);
    }
    out(`\n  ${bold(`#${i + 1} ${info.role}`)}  ${dim(`${clock(info.time?.created)}  ${info.id}`)}${marks.length ? `  ${marks.join('  ')}` : ''}`);
    for (const p of m.parts) {
      if (p.type === 'text') {
        const tags = [p.synthetic ? 'synthetic' : null].filter(Boolean);
        out(`    text${tags.length ? ` (${tags.join(', ')})` : ''}:`);
        out(indent(p.text, 6));
        if (p.metadata?.peerMessage) out(`    ${yellow('metadata.peerMessage')} = ${JSON.stringify(p.metadata.peerMessage)}`);
      } else if (p.type === 'tool') {
        const st = p.state ?? {};
        out(`    tool call ${bold(p.tool)} [${st.status}]  ${dim(p.callID ?? '')}`);
        out(`      input:  ${JSON.stringify(st.input ?? {})}`);
        if (st.output !== undefined) {
          out('      output:');
          out(indent(st.output, 8));
        }
        if (st.error) out(`      error: ${st.error}`);
      } else if (p.type === 'step-start' || p.type === 'step-finish') {
        // structure only; the finish reason is on the message line
      } else {
        out(`    ${p.type}`);
      }
    }
  });
}

/** Every file of the broker root, readable. */
function printBrokerRoot(root) {
  sub(`broker root ${root}`);
  const walk = (d) =>
    fs
      .readdirSync(d, { withFileTypes: true })
      .sort((a, b) => a.name.localeCompare(b.name))
      .flatMap((e) => (e.isDirectory() ? walk(path.join(d, e.name)) : [path.join(d, e.name)]));
  let files;
  try {
    files = walk(root);
  } catch (err) {
    out(`  (cannot read: ${err.message})`);
    return;
  }
  // registry first, then inboxes, archives, the log, then the rest
  const rank = (f) => {
    const b = path.basename(f);
    if (b === 'registry.json') return 0;
    if (b.endsWith('.inbox.json')) return 1;
    if (f.includes(`${path.sep}archive${path.sep}`)) return 2;
    if (b === 'broker.log') return 3;
    return 4;
  };
  files.sort((a, b) => rank(a) - rank(b) || a.localeCompare(b));
  for (const f of files) {
    const rel = path.relative(root, f);
    const st = fs.statSync(f);
    out(`\n  ${bold(rel)}  ${dim(`(${st.size} bytes, mode ${(st.mode & 0o777).toString(8)})`)}`);
    let text;
    try {
      text = fs.readFileSync(f, 'utf8');
    } catch (err) {
      out(`    (unreadable: ${err.message})`);
      continue;
    }
    if (f.endsWith('.json')) {
      try {
        out(indent(JSON.stringify(JSON.parse(text), null, 2), 4));
      } catch {
        out(indent(text, 4));
      }
    } else if (f.endsWith('.jsonl')) {
      for (const line of text.split('\n').filter(Boolean)) {
        try {
          out(indent(JSON.stringify(JSON.parse(line), null, 2), 4));
        } catch {
          out(indent(line, 4));
        }
      }
    } else if (f.endsWith('.lock') || st.size === 0) {
      out('    (lock / empty file)');
    } else if (/[\x00-\x08]/.test(text.slice(0, 512))) {
      out('    (binary)');
    } else {
      out(indent(text.replace(/\n$/, ''), 4));
    }
  }
}

async function main() {
  heading('c2c-bridge demo: two OpenCode sessions message each other');
  out(`repo ${REPO_ROOT}`);
  out(`node ${process.version}, ${os.platform()}-${os.arch()}, timeout ${TIMEOUT_MS / 1000} s${KEEP ? ', --keep' : ''}`);

  heading('1. Build');
  const built = await ensureBuilt({ log: (l) => step(l) });
  const addon = createRequire(import.meta.url)('../index.js');

  heading('2. Start the mock model and two OpenCode instances');
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'c2c-demo-'));
  const brokerRoot = path.join(tmp, 'broker');
  fs.mkdirSync(brokerRoot, { mode: 0o700 });
  mock = await startMockModel({
    script: (r) => {
      const reply = script(r);
      const what = reply.toolCalls ? `tool call ${reply.toolCalls.map((c) => `${c.name}(${JSON.stringify(c.arguments)})`).join(', ')}` : `text ${JSON.stringify(reply.text)}`;
      step(`${dim('mock model')} ${r.instance}: request #${r.index} (${r.messages.length} messages) → ${what}`);
      return reply;
    },
  });
  step(`mock model (OpenAI-compatible) on 127.0.0.1:${mock.port}`);
  step(`broker root ${brokerRoot}`);
  const start = (alias) => {
    const projectDir = path.join(tmp, `project-${alias}`);
    return startOpencode({
      projectDir,
      modelBaseURL: mock.baseURL(alias),
      plugins: [[REPO_ROOT, { alias, brokerRoot }]],
      keepTemp: KEEP,
    }).then((oc) => {
      servers.push(oc);
      step(`opencode serve for ${bold(alias)}: ${oc.url}, pid ${oc.pid}, project ${oc.projectDir}, listening after ${oc.timings.listenMs} ms, plugin loaded after ${oc.timings.readyMs} ms`);
      return oc;
    });
  };
  const [ocA, ocB] = await Promise.all([start('alice'), start('bob')]);
  const a = client(ocA);
  const b = client(ocB);
  const timings = { startup: Date.now() - T0 };

  heading('3. Scenario');
  const sa = await a.createSession({ title: 'alice' });
  const sb = await b.createSession({ title: 'bob' });
  step(`sessions created: alice ${sa.id}, bob ${sb.id}`);
  await waitFor(() => addon.listRegistrations(brokerRoot).length === 2, { message: 'both sessions registered', timeoutMs: 20_000 });
  for (const r of addon.listRegistrations(brokerRoot)) step(`registered: ${bold(r.alias)} = ${r.sessionId}, pid ${r.pid}, alive ${r.alive}`);

  let scenarioError;
  const t1 = Date.now();
  try {
    await Promise.race([
      (async () => {
        step(`user → alice: "ask bob what 6*7 is"`);
        await a.promptAsync(sa.id, 'ask bob what 6*7 is');
        await waitFor(async () => peerParts(await b.messages(sb.id)).length > 0, { message: 'bob receives the question', timeoutMs: TIMEOUT_MS });
        timings.questionDelivered = Date.now() - t1;
        step(green(`bob's session received alice's question (${timings.questionDelivered} ms after the prompt)`));
        await waitFor(async () => peerParts(await a.messages(sa.id)).length > 0, { message: "alice receives bob's answer", timeoutMs: TIMEOUT_MS });
        timings.answerDelivered = Date.now() - t1;
        step(green(`alice's session received bob's answer (${timings.answerDelivered} ms after the prompt)`));
        await waitFor(
          async () => {
            const msgs = await a.messages(sa.id);
            return msgs.some((m) => m.info.role === 'assistant' && m.parts.some((p) => p.type === 'text' && p.text.includes(`bob answered ${ANSWER}`)));
          },
          { message: "alice's model acknowledges", timeoutMs: TIMEOUT_MS },
        );
        await a.waitIdle(sa.id, { timeoutMs: TIMEOUT_MS });
        await b.waitIdle(sb.id, { timeoutMs: TIMEOUT_MS });
        await waitFor(
          () =>
            [sa.id, sb.id].every((id) => {
              try {
                return JSON.parse(fs.readFileSync(path.join(brokerRoot, `${id}.inbox.json`), 'utf8')).length === 0;
              } catch {
                return false;
              }
            }),
          { message: 'both inboxes drained (acknowledged)', timeoutMs: 10_000 },
        );
        timings.complete = Date.now() - t1;
        step(green(`alice's model acknowledged; both sessions idle, both inboxes empty (${timings.complete} ms after the prompt)`));
      })(),
      new Promise((_, reject) => {
        const t = setTimeout(() => reject(new Error(`scenario did not complete within ${TIMEOUT_MS / 1000} s`)), TIMEOUT_MS);
        t.unref();
      }),
    ]);
  } catch (err) {
    scenarioError = err;
    step(red(`FAILED: ${err instanceof Error ? err.message : String(err)}`));
  }

  heading('4. Transcripts (GET /session/:id/message)');
  for (const [name, c, sid] of [['alice', a, sa.id], ['bob', b, sb.id]]) {
    try {
      printTranscript(name, sid, await c.messages(sid));
    } catch (err) {
      out(`  ${name}: cannot read the transcript: ${err.message}`);
    }
  }

  heading('5. Broker root');
  printBrokerRoot(brokerRoot);

  heading('6. Plugin log lines (stderr of each OpenCode)');
  for (const [name, oc] of [['alice', ocA], ['bob', ocB]]) {
    sub(name);
    const lines = oc.logs().split('\n').filter((l) => l.startsWith('[c2c-bridge]'));
    out(lines.length ? indent(lines.join('\n'), 4) : '    (none)');
    if (scenarioError) {
      out(`    ${dim('last server output:')}`);
      out(indent(oc.logs().split('\n').slice(-30).join('\n'), 6));
    }
  }

  heading('7. Timings');
  for (const s of built) out(`  build: ${s.step.padEnd(28)} ${(s.ms / 1000).toFixed(1)} s`);
  for (const [name, oc] of [['alice', ocA], ['bob', ocB]]) {
    out(`  opencode ${name.padEnd(6)} listening ${oc.timings.listenMs} ms, ready (plugin loaded) ${oc.timings.readyMs} ms`);
  }
  out(`  up to both instances ready          ${(timings.startup / 1000).toFixed(1)} s`);
  if (timings.questionDelivered !== undefined) out(`  prompt → question in bob's session  ${timings.questionDelivered} ms`);
  if (timings.answerDelivered !== undefined) out(`  prompt → answer in alice's session  ${timings.answerDelivered} ms`);
  if (timings.complete !== undefined) out(`  prompt → all done                   ${timings.complete} ms`);
  const turnRequests = mock.turnRequests().length;
  out(`  model requests                       ${mock.requests.length} (${turnRequests} turn steps, ${mock.requests.length - turnRequests} title calls)`);

  heading('8. Stop');
  const t2 = Date.now();
  await cleanup();
  out(`  stopped both OpenCode instances and the mock model in ${Date.now() - t2} ms`);
  out(KEEP ? `  kept ${tmp} (broker root) and ${ocA.root}, ${ocB.root}` : `  removed ${tmp}`);
  out(`  total ${((Date.now() - T0) / 1000).toFixed(1)} s`);
  if (scenarioError) {
    out(red(bold('\nDEMO FAILED: the scenario did not complete.')));
    return 1;
  }
  out(green(bold('\nDEMO OK: alice asked, bob answered, alice acknowledged — all through c2c-bridge.')));
  return 0;
}

main().then(
  (code) => process.exit(code),
  async (err) => {
    out(red(`\ndemo error: ${err instanceof Error ? err.stack : String(err)}`));
    await cleanup();
    process.exit(1);
  },
);
