// `npm test`: build what the tests load, then run every test.
//
//   1. scripts/ensure-built.mjs (napi release build + plugin tsc)
//   2. cargo test            (the pure-Rust core; skip with --no-cargo)
//   3. npx vitest run        (unit and real-OpenCode e2e tests; extra arguments are passed on)
import { spawnSync } from 'node:child_process';
import { ensureBuilt, REPO_ROOT } from './ensure-built.mjs';

const args = process.argv.slice(2);
const noCargo = args.includes('--no-cargo');
const vitestArgs = args.filter((a) => a !== '--no-cargo');

/** @param {string} cmd @param {string[]} a */
function step(cmd, a) {
  process.stdout.write(`[test] ${cmd} ${a.join(' ')}\n`);
  const r = spawnSync(cmd, a, { cwd: REPO_ROOT, stdio: 'inherit' });
  if (r.status !== 0) {
    process.stderr.write(`[test] ${cmd} ${a.join(' ')} failed (${r.signal ?? `exit ${r.status}`})\n`);
    process.exit(r.status || 1);
  }
}

try {
  await ensureBuilt();
} catch (err) {
  process.stderr.write(`${err instanceof Error ? err.message : String(err)}\n`);
  process.exit(1);
}
if (!noCargo) step('cargo', ['test', '--quiet']);
step('npx', ['vitest', 'run', ...vitestArgs]);
