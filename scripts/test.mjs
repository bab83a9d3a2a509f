#!/usr/bin/env node
// `npm test`: every suite of c2c-bridge, in order, with one summary line at the end.
//
//   rust  cargo test                         (sums every "test result: … N passed; M failed" line)
//   node  Vitest under Node, all files but __tests__/e2e/
//   bun   the same Vitest files under Bun (`bun --bun node_modules/vitest/vitest.mjs`); the
//         tests spawn their children with process.execPath, so under Bun the CLI and the peer
//         processes run on Bun too
//   e2e   Vitest under Node, __tests__/e2e/ only (OpenCode end-to-end; skipped when absent)
//
// C2C_TEST_SUITES=rust,node,bun,e2e restricts the run. A suite whose tool is missing is
// skipped with a message; a suite that fails makes the runner exit 1. The last line of output
// is exactly `N passed, N failed` (plus `, N skipped` when some were skipped).
//
// The native addon (release) and the plugin are built first by scripts/ensure-built.mjs
// (incremental: a few seconds when nothing changed), since the JS suites load them.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { ensureBuilt } from './ensure-built.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const ALL = ['rust', 'node', 'bun', 'e2e'];
const VITEST = path.join(ROOT, 'node_modules', 'vitest', 'vitest.mjs');
const E2E_DIR = path.join(ROOT, '__tests__', 'e2e');

const wanted = (process.env.C2C_TEST_SUITES ?? '').split(',').map((s) => s.trim()).filter(Boolean);
for (const s of wanted) {
  if (!ALL.includes(s)) {
    console.error(`C2C_TEST_SUITES: unknown suite "${s}" (known: ${ALL.join(', ')})`);
    process.exit(2);
  }
}
const suites = wanted.length ? ALL.filter((s) => wanted.includes(s)) : ALL;

const totals = { passed: 0, failed: 0, skipped: 0 };
const report = [];

function banner(text) {
  console.log(`\n==== ${text} ${'='.repeat(Math.max(0, 70 - text.length))}`);
}

/** Run a command with inherited stdio, or with stdout also captured when `capture` is set. */
function run(cmd, args, { capture = false, env = process.env } = {}) {
  return new Promise((resolve) => {
    const child = spawn(cmd, args, { cwd: ROOT, env, stdio: ['ignore', capture ? 'pipe' : 'inherit', 'inherit'] });
    let out = '';
    if (capture) {
      child.stdout.on('data', (d) => {
        out += d;
        process.stdout.write(d);
      });
    }
    child.on('error', (e) => resolve({ code: 127, signal: null, out, error: e }));
    child.on('close', (code, signal) => resolve({ code, signal, out }));
  });
}

function have(cmd, args = ['--version']) {
  const r = spawnSync(cmd, args, { cwd: ROOT, stdio: 'ignore' });
  return !r.error && r.status === 0;
}

function record(name, counts, ms, note = '') {
  totals.passed += counts.passed;
  totals.failed += counts.failed;
  totals.skipped += counts.skipped;
  report.push({ name, ...counts, ms, note });
}

function skipSuite(name, why) {
  console.log(`[test] skipping ${name}: ${why}`);
  report.push({ name, passed: 0, failed: 0, skipped: 0, ms: 0, note: `skipped: ${why}` });
}

// ---------------------------------------------------------------------------------------

async function rustSuite() {
  banner('rust: cargo test');
  if (!have('cargo')) return skipSuite('rust', 'cargo is not installed');
  const t0 = Date.now();
  const r = await run('cargo', ['test', '--color', 'never'], { capture: true });
  const counts = { passed: 0, failed: 0, skipped: 0 };
  const re = /^test result: (?:ok|FAILED)\. (\d+) passed; (\d+) failed(?:; (\d+) ignored)?/gm;
  for (const m of r.out.matchAll(re)) {
    counts.passed += Number(m[1]);
    counts.failed += Number(m[2]);
    counts.skipped += Number(m[3] ?? 0);
  }
  let note = '';
  if (r.code !== 0 && counts.failed === 0) {
    counts.failed = 1; // a build failure or a crashed test binary
    note = `cargo test exited ${r.code ?? r.signal} without a failing test (build error?)`;
  }
  record('rust', counts, Date.now() - t0, note);
}

/** Build the addon (release) and the plugin when they are missing or stale (incremental). */
async function ensureAddon() {
  try {
    await ensureBuilt();
    return true;
  } catch (err) {
    console.error(String(err instanceof Error ? err.message : err));
    return false;
  }
}

/** One Vitest run; counts come from its JSON report, humans get the default reporter. */
async function vitestSuite(name, runtime, filters, extraArgs = []) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), `c2c-bridge-${name}-`));
  const out = path.join(tmp, 'vitest.json');
  const args = [
    ...runtime.args,
    VITEST, 'run',
    '--reporter=default', '--reporter=json', `--outputFile.json=${out}`,
    '--passWithNoTests',
    ...extraArgs,
    ...filters,
  ];
  const t0 = Date.now();
  const r = await run(runtime.cmd, args);
  const ms = Date.now() - t0;
  const counts = { passed: 0, failed: 0, skipped: 0 };
  let note = '';
  try {
    const j = JSON.parse(fs.readFileSync(out, 'utf8'));
    counts.passed = j.numPassedTests ?? 0;
    counts.failed = j.numFailedTests ?? 0;
    counts.skipped = (j.numPendingTests ?? 0) + (j.numTodoTests ?? 0);
    if ((r.code !== 0 || j.success === false) && counts.failed === 0) {
      // a file that failed to load, an unhandled error, a failing hook
      counts.failed = Math.max(1, j.numFailedTestSuites ?? 0);
      note = `vitest exited ${r.code ?? r.signal} with failed files or errors outside tests`;
    }
  } catch (e) {
    counts.failed = 1;
    note = `no JSON report (${e.code ?? e.message}); vitest exited ${r.code ?? r.signal}`;
  } finally {
    fs.rmSync(tmp, { recursive: true, force: true });
  }
  record(name, counts, ms, note);
}

function hasTests(dir) {
  if (!fs.existsSync(dir)) return false;
  return fs.readdirSync(dir, { recursive: true }).some((f) => /\.test\.(mjs|ts)$/.test(String(f)));
}

const NODE = { cmd: process.execPath, args: [] };

function bunRuntime() {
  const local = path.join(ROOT, 'node_modules', '.bin', 'bun');
  for (const cmd of [local, 'bun']) {
    if ((cmd === 'bun' || fs.existsSync(cmd)) && have(cmd)) return { cmd, args: ['--bun'] };
  }
  return null;
}

// ---------------------------------------------------------------------------------------

const jsSuites = suites.filter((s) => s !== 'rust');
let addonOk = true;
if (jsSuites.length && fs.existsSync(VITEST)) addonOk = await ensureAddon();

for (const suite of suites) {
  if (suite === 'rust') {
    await rustSuite();
    continue;
  }
  if (!fs.existsSync(VITEST)) {
    skipSuite(suite, 'vitest is not installed (run npm ci)');
    continue;
  }
  if (!addonOk) {
    banner(`${suite}: vitest`);
    console.log('[test] the native addon failed to build');
    record(suite, { passed: 0, failed: 1, skipped: 0 }, 0, 'addon build failed');
    continue;
  }
  if (suite === 'node') {
    banner('node: vitest under Node (all but __tests__/e2e/)');
    await vitestSuite('node', NODE, [], ['--exclude', '__tests__/e2e/**']);
  } else if (suite === 'bun') {
    const bun = bunRuntime();
    if (!bun) {
      skipSuite('bun', 'bun is not installed (npm ci installs it as a dev dependency)');
      continue;
    }
    banner('bun: the same vitest files under Bun');
    await vitestSuite('bun', bun, [], ['--exclude', '__tests__/e2e/**']);
  } else if (suite === 'e2e') {
    if (!hasTests(E2E_DIR)) {
      skipSuite('e2e', 'no test files under __tests__/e2e/');
      continue;
    }
    banner('e2e: vitest under Node, __tests__/e2e/');
    await vitestSuite('e2e', NODE, ['__tests__/e2e/'], ['--no-file-parallelism']);
  }
}

banner('summary');
for (const s of report) {
  const time = s.ms ? `${(s.ms / 1000).toFixed(1)} s` : '-';
  console.log(`${s.name.padEnd(5)} ${String(s.passed).padStart(4)} passed ${String(s.failed).padStart(3)} failed ${String(s.skipped).padStart(3)} skipped  ${time.padStart(7)}  ${s.note}`.trimEnd());
}
const anyFailed = totals.failed > 0;
console.log(`${totals.passed} passed, ${totals.failed} failed${totals.skipped ? `, ${totals.skipped} skipped` : ''}`);
process.exitCode = anyFailed ? 1 : 0;
