#!/usr/bin/env node
// Build the prebuilt Linux binaries that can be built on this machine, check them, load-test
// them, and put each at npm/<platform>/c2c-bridge.<platform>.node (where scripts/pack.mjs and
// the release workflow take them from).
//
//   node scripts/build-platforms.mjs [--only linux-x64-gnu,linux-x64-musl,linux-arm64-gnu] [--no-load-test]
//
//   linux-x64-gnu    cargo-zigbuild, glibc 2.17: objdump -T shows no GLIBC_ symbol above 2.17;
//                    loads in this Node
//   linux-x64-musl   cargo-zigbuild: readelf -d shows no glibc (no libc.so.6 / ld-linux);
//                    load test: a tiny musl program (zig cc, linked against musl) dlopens it
//                    through musl's loader (/lib/ld-musl-x86_64.so.1, Debian package `musl`) and
//                    finds napi_register_module_v1. Alpine's Node cannot be had here, and the
//                    musl Bun on npm needs a musl libstdc++ that Debian does not ship.
//   linux-arm64-gnu  cargo-zigbuild, glibc 2.17: objdump -T as above, ELF machine AArch64;
//                    loads in the arm64 Bun from npm (@oven/bun-linux-aarch64) under qemu-user
//                    with Debian's arm64 glibc (qemu-user, libc6-arm64-cross)
//
// The darwin and windows targets are built by .github/workflows/release.yml only.
//
// Tools: Rust targets come from `rustup target add`; zig from the PyPI package `ziglang`
// (`python3 -m ziglang`, found by cargo-zigbuild by itself); cargo-zigbuild from crates.io
// (`cargo install cargo-zigbuild`). A target whose tool cannot be had is skipped with one line.
// Every build runs under `nice -n 19`. Exit code 1 when a build or a check fails (not for skips).
// The last line is `N passed, N failed, N skipped` (one per target).
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');
const BIN_NAME = 'c2c-bridge';
const GLIBC_MAX = [2, 17];
const BUN_VERSION = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8')).devDependencies?.bun ?? '1.3.14';
const CACHE = path.join(ROOT, 'target', 'platform-tools');

const TARGETS = {
  'linux-x64-gnu': { triple: 'x86_64-unknown-linux-gnu', zigTarget: 'x86_64-unknown-linux-gnu.2.17', machine: 'X86-64', libc: 'gnu' },
  'linux-x64-musl': { triple: 'x86_64-unknown-linux-musl', zigTarget: 'x86_64-unknown-linux-musl', machine: 'X86-64', libc: 'musl' },
  'linux-arm64-gnu': { triple: 'aarch64-unknown-linux-gnu', zigTarget: 'aarch64-unknown-linux-gnu.2.17', machine: 'AArch64', libc: 'gnu' },
};

function sh(cmd, args, opts = {}) {
  const r = spawnSync(cmd, args, { cwd: ROOT, encoding: 'utf8', maxBuffer: 256 * 1024 * 1024, ...opts });
  return { ok: !r.error && r.status === 0, status: r.status, out: r.stdout ?? '', err: (r.stderr ?? '') + (r.error ? String(r.error) : '') };
}
const have = (cmd, args = ['--version']) => sh(cmd, args).ok;

/** zig from PyPI's `ziglang` (installed with pip when missing). */
function ensureZig() {
  if (have('zig', ['version'])) return { ok: true, how: 'zig on PATH' };
  if (have('python3', ['-m', 'ziglang', 'version'])) return { ok: true, how: 'python3 -m ziglang' };
  const pip = sh('python3', ['-m', 'pip', 'install', '--quiet', 'ziglang==0.15.1']);
  if (pip.ok && have('python3', ['-m', 'ziglang', 'version'])) return { ok: true, how: 'pip install ziglang' };
  return { ok: false, why: `zig cannot be had (pip install ziglang: ${pip.err.trim().split('\n').pop()})` };
}

function ensureZigbuild() {
  if (have('cargo-zigbuild', ['--version'])) return { ok: true };
  // PyPI ships cargo-zigbuild prebuilt (seconds); compiling it from crates.io takes minutes.
  const pip = sh('python3', ['-m', 'pip', 'install', '--quiet', 'cargo-zigbuild==0.24.1']);
  if (pip.ok && have('cargo-zigbuild', ['--version'])) return { ok: true };
  const r = sh('nice', ['-n', '19', 'cargo', 'install', '--locked', 'cargo-zigbuild', '--version', '0.24.1'], { stdio: ['ignore', 'inherit', 'inherit'] });
  if (r.ok && have('cargo-zigbuild', ['--version'])) return { ok: true };
  return { ok: false, why: 'cargo-zigbuild cannot be installed (cargo install cargo-zigbuild failed)' };
}

function ensureRustTarget(triple) {
  const list = sh('rustup', ['target', 'list', '--installed']);
  if (list.ok && list.out.split('\n').includes(triple)) return { ok: true };
  if (!have('rustup')) return { ok: false, why: `rustup is missing, so the Rust target ${triple} cannot be added` };
  const r = sh('rustup', ['target', 'add', triple]);
  return r.ok ? { ok: true } : { ok: false, why: `rustup target add ${triple} failed: ${r.err.trim().split('\n').pop()}` };
}

/** Highest GLIBC_x.y version the dynamic symbol table asks for, or null. */
export function maxGlibc(objdumpT) {
  let max = null;
  for (const m of objdumpT.matchAll(/GLIBC_(\d+)\.(\d+)(?:\.(\d+))?/g)) {
    const v = [Number(m[1]), Number(m[2]), Number(m[3] ?? 0)];
    if (!max || v[0] > max[0] || (v[0] === max[0] && (v[1] > max[1] || (v[1] === max[1] && v[2] > max[2])))) max = v;
  }
  return max;
}

function build(platform, t) {
  const outDir = fs.mkdtempSync(path.join(os.tmpdir(), `c2c-build-${platform}-`));
  try {
    const args = ['-n', '19', process.execPath, path.join(ROOT, 'node_modules', '@napi-rs', 'cli', 'dist', 'cli.js'),
      'build', '--platform', '--release', '--target', t.zigTarget, '-x', '--output-dir', outDir, '--no-js', '--dts', 'unused.d.ts',
      // one target dir per platform, so that several --only runs can build at once
      '--target-dir', path.join(ROOT, 'target', 'cross', platform)];
    const cli = path.join(ROOT, 'node_modules', '@napi-rs', 'cli', 'dist', 'cli.js');
    const r = fs.existsSync(cli)
      ? sh('nice', args, { stdio: ['ignore', 'inherit', 'inherit'] })
      : sh('nice', ['-n', '19', 'npx', 'napi', ...args.slice(4)], { stdio: ['ignore', 'inherit', 'inherit'] });
    const file = `${BIN_NAME}.${platform}.node`;
    const built = path.join(outDir, file);
    if (!r.ok || !fs.existsSync(built)) return { ok: false, why: `napi build --target ${t.zigTarget} -x failed (exit ${r.status})` };
    const dest = path.join(ROOT, 'npm', platform, file);
    fs.copyFileSync(built, dest);
    return { ok: true, file: dest };
  } finally {
    fs.rmSync(outDir, { recursive: true, force: true });
  }
}

/** Static checks of one built binary; returns a list of failures and facts. */
function check(platform, t, file) {
  const facts = [];
  const fails = [];
  const header = sh('readelf', ['-h', file]);
  const machine = /Machine:\s+(.*)/.exec(header.out)?.[1] ?? '?';
  if (!machine.includes(t.machine)) fails.push(`ELF machine is ${machine}, expected ${t.machine}`);
  else facts.push(`machine ${t.machine}`);
  const dyn = sh('readelf', ['-d', file]);
  const needed = [...dyn.out.matchAll(/\(NEEDED\)\s+Shared library: \[(.*)\]/g)].map((m) => m[1]);
  facts.push(`NEEDED ${needed.join(' ') || '(none)'}`);
  if (t.libc === 'musl') {
    const glibc = needed.filter((n) => /^(libc\.so\.6|ld-linux|libpthread\.so\.0|libdl\.so\.2|libm\.so\.6)/.test(n));
    if (glibc.length) fails.push(`musl build needs glibc libraries: ${glibc.join(', ')}`);
    const sym = sh('objdump', ['-T', file]);
    if (/GLIBC_/.test(sym.out)) fails.push('musl build has GLIBC_ versioned symbols');
  } else {
    const sym = sh('objdump', ['-T', file]);
    if (!sym.ok) fails.push(`objdump -T failed: ${sym.err.trim()}`);
    const max = maxGlibc(sym.out);
    if (!max) fails.push('no GLIBC_ symbol versions found (not a glibc build?)');
    else {
      facts.push(`highest GLIBC_${max[0]}.${max[1]}${max[2] ? `.${max[2]}` : ''}`);
      if (max[0] > GLIBC_MAX[0] || (max[0] === GLIBC_MAX[0] && max[1] > GLIBC_MAX[1])) fails.push(`needs glibc ${max.join('.')} > ${GLIBC_MAX.join('.')}`);
    }
  }
  facts.push(`${(fs.statSync(file).size / 1024 / 1024).toFixed(2)} MiB`);
  return { facts, fails };
}

// Load the binary directly and pass one message between two brokers in a temp root.
const LOAD_JS = [
  "const b = require(process.argv[process.argv.length - 1]);",
  "const root = require('fs').mkdtempSync(require('os').tmpdir() + '/c2c-load-') + '/broker';",
  "const a = b.Broker.open({ root, alias: 'load-a', sessionId: 'ses_load_a' });",
  "const z = b.Broker.open({ root, alias: 'load-b', sessionId: 'ses_load_b' });",
  "a.send('load-b', 'hello from ' + process.arch);",
  "const got = z.drain().map((m) => m.content);",
  "a.close(); z.close();",
  "if (got.join() !== 'hello from ' + process.arch) { console.error('got', got); process.exit(1); }",
  "console.log('one message passed on ' + process.arch);",
].join(' ');

/** npm pack a runtime package into the cache and return its extracted folder. */
function npmRuntime(spec) {
  const dir = path.join(CACHE, spec.replace(/[@/]/g, '_'));
  if (fs.existsSync(path.join(dir, 'package', 'package.json'))) return dir;
  fs.mkdirSync(dir, { recursive: true });
  const r = sh('npm', ['pack', spec, '--silent'], { cwd: dir });
  const tgz = r.out.trim().split('\n').pop();
  if (!r.ok || !tgz) return null;
  return sh('tar', ['xzf', tgz], { cwd: dir }).ok ? dir : null;
}

/** Load test; returns {ok, how} or {skip, why}. */
function loadTest(platform, t, file) {
  if (platform === 'linux-x64-gnu') {
    if (process.platform !== 'linux' || process.arch !== 'x64') return { skip: true, why: 'not an x64 Linux host' };
    const r = sh(process.execPath, ['-e', LOAD_JS, file]);
    return r.ok ? { ok: true, how: `node ${process.version}: ${r.out.trim()}` } : { ok: false, why: r.err.trim().split('\n')[0] };
  }
  if (platform === 'linux-x64-musl') {
    const ldMusl = '/lib/ld-musl-x86_64.so.1';
    if (!fs.existsSync(ldMusl)) return { skip: true, why: `no musl loader ${ldMusl} (Debian package musl)` };
    const zig = have('zig', ['version']) ? ['zig'] : ['python3', '-m', 'ziglang'];
    const src = path.join(CACHE, 'musl-dlopen.c');
    const exe = path.join(CACHE, 'musl-dlopen');
    fs.mkdirSync(CACHE, { recursive: true });
    fs.writeFileSync(src, [
      '#include <dlfcn.h>', '#include <stdio.h>',
      'int main(int c, char **v) {',
      '  void *h = dlopen(v[1], RTLD_NOW | RTLD_LOCAL);',
      '  if (!h) { fprintf(stderr, "dlopen: %s\\n", dlerror()); return 1; }',
      '  void *f = dlsym(h, "napi_register_module_v1");',
      '  if (!f) { fprintf(stderr, "dlsym: %s\\n", dlerror()); return 1; }',
      '  printf("dlopen ok, napi_register_module_v1 found\\n"); return 0; }', ''].join('\n'));
    const cc = sh(zig[0], [...zig.slice(1), 'cc', '-target', 'x86_64-linux-musl', '-dynamic', '-o', exe, src]);
    if (!cc.ok) return { skip: true, why: `zig cc for musl failed: ${cc.err.trim().split('\n')[0]}` };
    const interp = sh('readelf', ['-l', exe]).out;
    if (!interp.includes(ldMusl)) return { skip: true, why: 'the musl probe is not dynamically linked against musl' };
    const r = sh(exe, [file]);
    return r.ok ? { ok: true, how: `musl loader ${ldMusl}: ${r.out.trim()} (no musl Node here)` } : { ok: false, why: r.err.trim() };
  }
  if (platform === 'linux-arm64-gnu') {
    const qemu = ['qemu-aarch64', 'qemu-aarch64-static'].find((q) => have(q, ['--version']));
    if (!qemu) return { skip: true, why: 'no qemu-user (Debian package qemu-user)' };
    const sysroot = '/usr/aarch64-linux-gnu';
    if (!fs.existsSync(path.join(sysroot, 'lib', 'libc.so.6'))) return { skip: true, why: `no arm64 glibc in ${sysroot} (Debian package libc6-arm64-cross)` };
    const rt = npmRuntime(`@oven/bun-linux-aarch64@${BUN_VERSION}`);
    if (!rt) return { skip: true, why: `npm pack @oven/bun-linux-aarch64@${BUN_VERSION} failed` };
    const bun = path.join(rt, 'package', 'bin', 'bun');
    fs.chmodSync(bun, 0o755);
    const r = sh(qemu, ['-L', sysroot, bun, '-e', LOAD_JS, file], { env: { ...process.env, BUN_INSTALL_CACHE_DIR: path.join(CACHE, 'bun-cache') } });
    return r.ok ? { ok: true, how: `arm64 Bun ${BUN_VERSION} under ${qemu}: ${r.out.trim()}` } : { ok: false, why: (r.err || r.out).trim().split('\n').slice(0, 3).join(' | ') };
  }
  return { skip: true, why: 'no load test for this platform here' };
}

const { values } = parseArgs({
  options: { only: { type: 'string' }, 'no-load-test': { type: 'boolean', default: false } },
});
const wanted = values.only ? values.only.split(',').map((s) => s.trim()) : Object.keys(TARGETS);
for (const p of wanted) if (!TARGETS[p]) {
  console.error(`unknown platform ${p} (buildable here: ${Object.keys(TARGETS).join(', ')})`);
  process.exit(2);
}
const counts = { passed: 0, failed: 0, skipped: 0 };
const zig = ensureZig();
const zigbuild = zig.ok ? ensureZigbuild() : zig;
for (const platform of wanted) {
  const t = TARGETS[platform];
  const t0 = Date.now();
  const tool = !zigbuild.ok ? zigbuild : ensureRustTarget(t.triple);
  if (!tool.ok) {
    console.log(`[platforms] ${platform}: skipped: ${tool.why}`);
    counts.skipped++;
    continue;
  }
  console.log(`[platforms] ${platform}: building (${t.zigTarget}, cargo-zigbuild, ${zig.how})`);
  const b = build(platform, t);
  if (!b.ok) {
    console.log(`[platforms] ${platform}: FAILED: ${b.why}`);
    counts.failed++;
    continue;
  }
  const c = check(platform, t, b.file);
  let line = `${path.relative(ROOT, b.file)}: ${c.facts.join(', ')}`;
  let failed = c.fails.length > 0;
  if (!failed && !values['no-load-test']) {
    const l = loadTest(platform, t, b.file);
    if (l.skip) line += `; load test skipped: ${l.why}`;
    else if (l.ok) line += `; loads: ${l.how}`;
    else {
      failed = true;
      c.fails.push(`does not load: ${l.why}`);
    }
  }
  const secs = ((Date.now() - t0) / 1000).toFixed(0);
  if (failed) {
    console.log(`[platforms] ${platform}: FAILED (${secs} s): ${c.fails.join('; ')} — ${line}`);
    counts.failed++;
  } else {
    console.log(`[platforms] ${platform}: ok (${secs} s): ${line}`);
    counts.passed++;
  }
}
console.log(`${counts.passed} passed, ${counts.failed} failed${counts.skipped ? `, ${counts.skipped} skipped` : ''}`);
process.exitCode = counts.failed ? 1 : 0;
