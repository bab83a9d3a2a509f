// Make sure the native addon and the OpenCode plugin are built before tests or the demo run.
//
//   node scripts/ensure-built.mjs        (or: import { ensureBuilt } from './ensure-built.mjs')
//
// Runs `npx napi build --platform --release` and `npx tsc -p plugin/tsconfig.json` when their
// outputs are missing or older than their sources, printing each command and how long it took.
// Throws (exits non-zero when run directly) if either fails.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

export const REPO_ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Newest modification time (ms) of the files under `rel` (a file or a directory), 0 if absent. */
function newest(rel) {
  const p = path.join(REPO_ROOT, rel);
  if (!fs.existsSync(p)) return 0;
  const st = fs.statSync(p);
  if (!st.isDirectory()) return st.mtimeMs;
  let max = 0;
  for (const e of fs.readdirSync(p)) max = Math.max(max, newest(path.join(rel, e)));
  return max;
}

/** Oldest output time (ms), 0 when any output is missing. */
function oldest(rels) {
  let min = Infinity;
  for (const rel of rels) {
    const t = newest(rel);
    if (t === 0) return 0;
    min = Math.min(min, t);
  }
  return min;
}

/**
 * The build steps, in order. A step is skipped when its outputs are newer than its inputs
 * (the napi CLI sets environment that makes cargo re-run build.rs and relink on every call,
 * which costs a minute on two cores for nothing).
 */
export const STEPS = [
  {
    what: 'native addon (release)',
    cmd: 'npx',
    args: ['napi', 'build', '--platform', '--release'],
    inputs: ['src', 'Cargo.toml', 'Cargo.lock', 'build.rs'],
    outputs: ['c2c-bridge.linux-x64-gnu.node', 'index.js', 'index.d.ts'],
  },
  {
    what: 'OpenCode plugin',
    cmd: 'npx',
    args: ['tsc', '-p', 'plugin/tsconfig.json'],
    inputs: ['plugin/src', 'plugin/tsconfig.json', 'index.d.ts'],
    outputs: ['plugin/dist/index.mjs'],
  },
];

/** @param {string} cmd @param {string[]} args @param {{quiet?: boolean}} o */
function run(cmd, args, o) {
  return new Promise((resolve, reject) => {
    const child = spawn(cmd, args, { cwd: REPO_ROOT, stdio: o.quiet ? ['ignore', 'pipe', 'pipe'] : 'inherit' });
    let out = '';
    child.stdout?.on('data', (b) => (out += b));
    child.stderr?.on('data', (b) => (out += b));
    child.on('error', reject);
    child.on('exit', (code, signal) => {
      if (code === 0) resolve(undefined);
      else reject(new Error(`${cmd} ${args.join(' ')} failed (${signal ?? `exit ${code}`})${out ? `\n${out}` : ''}`));
    });
  });
}

/**
 * Build the addon and the plugin.
 * @param {{log?: (line: string) => void, quiet?: boolean, force?: boolean}} [o]
 *   `log`: where progress lines go (default: stdout); `quiet`: capture the tools' own output
 *   and show it only on failure.
 * @returns {Promise<{step: string, ms: number}[]>}
 */
export async function ensureBuilt(o = {}) {
  const log = o.log ?? ((l) => process.stdout.write(`${l}\n`));
  if (!fs.existsSync(path.join(REPO_ROOT, 'node_modules', '.bin', 'napi'))) {
    throw new Error(`ensure-built: ${path.join(REPO_ROOT, 'node_modules')} has no napi CLI; run \`npm ci\` first`);
  }
  const done = [];
  for (const s of STEPS) {
    if (!o.force && oldest(s.outputs) > Math.max(...s.inputs.map(newest))) {
      log(`[ensure-built] ${s.what}: up to date`);
      continue;
    }
    log(`[ensure-built] ${s.what}: ${s.cmd} ${s.args.join(' ')}`);
    const t0 = Date.now();
    await run(s.cmd, s.args, { quiet: o.quiet });
    const ms = Date.now() - t0;
    log(`[ensure-built] ${s.what}: done in ${(ms / 1000).toFixed(1)} s`);
    done.push({ step: s.what, ms });
  }
  return done;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  ensureBuilt().catch((err) => {
    process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
    process.exit(1);
  });
}
