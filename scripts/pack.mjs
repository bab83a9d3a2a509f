#!/usr/bin/env node
// Pack c2c-bridge for publishing: the main package and the platform packages (npm/<platform>/).
//
//   node scripts/pack.mjs [--out DIR] [--platforms host|all|<p>,<p>] [--allow-host-build]
//
// - Main package: staged in a temp folder (the package.json `files` plus README.md and
//   package.json), with `optionalDependencies` naming every platform package of
//   package.json `napi.targets` at the same version. They are added here, not kept in the
//   repo's package.json, because `npm ci` refuses a lock file without them and they do not
//   exist on a registry before the first release (napi-rs's `prepublish` does the same).
// - Platform packages: npm/<platform>/ with its `c2c-bridge.<platform>.node`, put there by
//   scripts/build-platforms.mjs (or by `napi artifacts` in the release workflow). A platform
//   whose binary is missing is skipped with one line; `--platforms all` makes that an error.
//   `--allow-host-build` lets the host platform fall back to the root `c2c-bridge.<platform>.node`
//   of `npm run build` (needs the build machine's glibc, so for local tests only).
//
// Prints one line per tarball (`name@version file size`) and, last, a JSON summary line.
import { execFileSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { parseArgs } from 'node:util';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** napi-rs platform name of a Rust target triple (the ones package.json may list). */
export function platformOfTriple(triple) {
  const table = {
    'x86_64-unknown-linux-gnu': 'linux-x64-gnu',
    'x86_64-unknown-linux-musl': 'linux-x64-musl',
    'aarch64-unknown-linux-gnu': 'linux-arm64-gnu',
    'aarch64-unknown-linux-musl': 'linux-arm64-musl',
    'x86_64-apple-darwin': 'darwin-x64',
    'aarch64-apple-darwin': 'darwin-arm64',
    'x86_64-pc-windows-msvc': 'win32-x64-msvc',
    'aarch64-pc-windows-msvc': 'win32-arm64-msvc',
  };
  const p = table[triple];
  if (!p) throw new Error(`no napi platform name known for target ${triple}`);
  return p;
}

/** napi-rs platform name of this process (linux-x64-gnu, darwin-arm64, …). */
export function hostPlatform() {
  if (process.platform === 'linux') {
    const glibc = process.report?.getReport()?.header?.glibcVersionRuntime;
    return `linux-${process.arch}-${glibc ? 'gnu' : 'musl'}`;
  }
  if (process.platform === 'win32') return `win32-${process.arch}-msvc`;
  return `${process.platform}-${process.arch}`;
}

function npmPack(dir, out) {
  const json = execFileSync('npm', ['pack', '--json', '--pack-destination', out], { cwd: dir, encoding: 'utf8' });
  const [info] = JSON.parse(json);
  return info;
}

/** Pack the packages; returns [{name, version, file, size, unpackedSize, entries}]. */
export function pack({ out, platforms = 'host', allowHostBuild = false, log = console.log }) {
  const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
  const all = pkg.napi.targets.map(platformOfTriple);
  let wanted;
  if (platforms === 'all') wanted = all;
  else if (platforms === 'host') wanted = [hostPlatform()];
  else wanted = String(platforms).split(',').map((s) => s.trim()).filter(Boolean);
  for (const p of wanted) if (!all.includes(p)) throw new Error(`platform ${p} is not in package.json napi.targets`);
  fs.mkdirSync(out, { recursive: true });
  const results = [];
  const stage = fs.mkdtempSync(path.join(os.tmpdir(), 'c2c-pack-'));
  try {
    // the main package
    const main = path.join(stage, 'c2c-bridge');
    fs.mkdirSync(main);
    for (const f of pkg.files) {
      const src = path.join(ROOT, f);
      if (!fs.existsSync(src)) throw new Error(`${f} (package.json files) does not exist: run npm run build first`);
      fs.cpSync(src, path.join(main, f), { recursive: true });
    }
    if (fs.existsSync(path.join(ROOT, 'README.md'))) fs.copyFileSync(path.join(ROOT, 'README.md'), path.join(main, 'README.md'));
    const staged = { ...pkg, optionalDependencies: Object.fromEntries(all.map((p) => [`${pkg.name}-${p}`, pkg.version])) };
    delete staged.devDependencies;
    delete staged.scripts;
    delete staged.allowScripts;
    delete staged.overrides;
    fs.writeFileSync(path.join(main, 'package.json'), `${JSON.stringify(staged, null, 2)}\n`);
    results.push(npmPack(main, out));

    // the platform packages
    for (const p of wanted) {
      const dir = path.join(ROOT, 'npm', p);
      const file = `${pkg.binaryName ?? pkg.napi.binaryName}.${p}.node`;
      let bin = path.join(dir, file);
      if (!fs.existsSync(bin) && allowHostBuild && p === hostPlatform() && fs.existsSync(path.join(ROOT, file))) {
        log(`[pack] ${p}: no npm/${p}/${file}; using the host build ${file} (local tests only)`);
        bin = path.join(ROOT, file);
      }
      if (!fs.existsSync(bin)) {
        if (platforms === 'all') throw new Error(`npm/${p}/${file} is missing`);
        log(`[pack] ${p}: skipped, no binary (npm/${p}/${file}): run scripts/build-platforms.mjs`);
        continue;
      }
      const pdir = path.join(stage, p);
      fs.mkdirSync(pdir);
      const ppkg = JSON.parse(fs.readFileSync(path.join(dir, 'package.json'), 'utf8'));
      if (ppkg.version !== pkg.version) throw new Error(`npm/${p}/package.json version ${ppkg.version} is not ${pkg.version}`);
      fs.writeFileSync(path.join(pdir, 'package.json'), `${JSON.stringify(ppkg, null, 2)}\n`);
      fs.copyFileSync(bin, path.join(pdir, file));
      if (fs.existsSync(path.join(dir, 'README.md'))) fs.copyFileSync(path.join(dir, 'README.md'), path.join(pdir, 'README.md'));
      results.push(npmPack(pdir, out));
    }
  } finally {
    fs.rmSync(stage, { recursive: true, force: true });
  }
  const summary = results.map((r) => ({
    name: r.name,
    version: r.version,
    file: path.join(out, r.filename),
    size: r.size,
    unpackedSize: r.unpackedSize,
    entries: r.entryCount,
    files: r.files.map((f) => f.path),
  }));
  for (const r of summary) log(`[pack] ${r.name}@${r.version} ${path.basename(r.file)} ${(r.size / 1024).toFixed(1)} kB (${r.entries} files, ${(r.unpackedSize / 1024).toFixed(1)} kB unpacked)`);
  return summary;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const { values } = parseArgs({
    options: {
      out: { type: 'string', default: path.join(ROOT, 'dist-npm') },
      platforms: { type: 'string', default: 'host' },
      'allow-host-build': { type: 'boolean', default: false },
    },
  });
  try {
    const summary = pack({ out: path.resolve(values.out), platforms: values.platforms, allowHostBuild: values['allow-host-build'] });
    console.log(JSON.stringify(summary.map(({ files, ...r }) => r)));
  } catch (err) {
    console.error(`[pack] ${err.message}`);
    process.exit(1);
  }
}
