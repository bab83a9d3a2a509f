'use strict';
/**
 * Entry point of the `c2c-bridge` package for Node and Bun (`require('c2c-bridge')`, the
 * plugin and the CLI all load the addon through here).
 *
 * It loads napi-rs's generated loader (`index.js`), which looks for the prebuilt binary first
 * next to itself (`c2c-bridge.<platform>.node`, a source build) and then in the platform
 * package `c2c-bridge-<platform>` (an optional dependency of this package, installed by npm
 * only on the matching `os`/`cpu`/`libc`). When that fails, napi-rs throws a generic "Cannot
 * find native binding" with the reasons buried in `cause`; this file replaces it with one error
 * that names the platform and the package that should provide the binary:
 *
 * - `code: 'C2C_PLATFORM_UNSUPPORTED'`: no prebuilt binary is published for this platform.
 * - `code: 'C2C_BINARY_MISSING'`: the platform package is not installed (e.g. installed with
 *   `--omit=optional`, or node_modules copied from another platform).
 * - `code: 'C2C_BINARY_BROKEN'`: the package (or a local build) is there but its `.node` file
 *   does not load (corrupt, wrong architecture, too old a glibc); the first line of the
 *   system's reason is kept in the message.
 *
 * Every such error also carries `platform` (e.g. `linux-x64-gnu`), `package` (e.g.
 * `c2c-bridge-linux-x64-gnu`) and `cause` (napi-rs's original error).
 */
const fs = require('node:fs');
const path = require('node:path');

/** Platforms with a published prebuilt binary (napi-rs platform names, package.json `napi.targets`). */
const SUPPORTED = [
  'linux-x64-gnu',
  'linux-x64-musl',
  'linux-arm64-gnu',
  'darwin-x64',
  'darwin-arm64',
  'win32-x64-msvc',
];

/** true when this Linux process runs on musl libc (same tests as napi-rs's loader). */
function isMusl() {
  try {
    return fs.readFileSync('/usr/bin/ldd', 'utf8').includes('musl');
  } catch {
    // no ldd: ask the process report, which names glibc's runtime version when there is one
  }
  try {
    const report = process.report && process.report.getReport && process.report.getReport();
    if (report && report.header) return !report.header.glibcVersionRuntime;
  } catch {
    // no report either: assume glibc, as napi-rs's loader does
  }
  return false;
}

/** napi-rs's name for the running platform: `linux-x64-gnu`, `darwin-arm64`, `win32-x64-msvc`, … */
function platformName() {
  const { platform, arch } = process;
  if (platform === 'linux') return `linux-${arch}-${isMusl() ? 'musl' : 'gnu'}`;
  if (platform === 'win32') return `win32-${arch}-msvc`;
  return `${platform}-${arch}`;
}

/** First non-empty line of each message in an error's `cause` chain, deduplicated. */
function reasons(err) {
  const lines = [];
  let e = err;
  for (let depth = 0; e && depth < 8; depth++) {
    const msg = e instanceof Error ? e.message : String(e);
    const first = String(msg).split('\n')[0].trim();
    if (first && !lines.includes(first)) lines.push(first);
    e = e instanceof Error ? e.cause : undefined;
  }
  return lines;
}

/** Replace napi-rs's generic load failure by one error naming the platform and its package. */
function describeLoadFailure(err) {
  const platform = platformName();
  const pkg = `c2c-bridge-${platform}`;
  const version = require('./package.json').version;
  let code;
  let message;
  if (!SUPPORTED.includes(platform)) {
    code = 'C2C_PLATFORM_UNSUPPORTED';
    message =
      `c2c-bridge has no prebuilt binary for this platform (${platform}); ` +
      `prebuilt: ${SUPPORTED.join(', ')}. Build it from source (see the README, "Building from source").`;
  } else {
    const local = path.join(__dirname, `c2c-bridge.${platform}.node`);
    let installed = null;
    try {
      installed = path.dirname(require.resolve(`${pkg}/package.json`));
    } catch {
      // not installed
    }
    if (installed === null && !fs.existsSync(local)) {
      code = 'C2C_BINARY_MISSING';
      message =
        `c2c-bridge ${version}: the prebuilt binary for ${platform} is missing: the package ${pkg} ` +
        `(an optional dependency of c2c-bridge) is not installed. Reinstall c2c-bridge without ` +
        `--omit=optional / --no-optional, on this platform, or add ${pkg}@${version} yourself.`;
    } else {
      const where = installed !== null ? `the package ${pkg} (${installed})` : `the local build ${local}`;
      const why = reasons(err).filter((l) => !/^Cannot find native binding/.test(l));
      const specific = why.filter((l) => l.includes('.node'));
      const shown = (specific.length ? specific : why).slice(0, 2).join('; ') || 'unknown error';
      code = 'C2C_BINARY_BROKEN';
      message =
        `c2c-bridge ${version}: the prebuilt binary for ${platform} from ${where} does not load: ${shown}. ` +
        `Reinstall ${pkg}@${version}.`;
    }
  }
  const out = new Error(message, { cause: err });
  out.code = code;
  out.platform = platform;
  out.package = pkg;
  return out;
}

// Load once to turn a failure into the error above; then re-export with the one statement form
// that Node's CommonJS lexer reads, so `import { Broker } from 'c2c-bridge'` works from ESM.
try {
  require('./index.js');
} catch (err) {
  throw describeLoadFailure(err);
}
module.exports = require('./index.js');
