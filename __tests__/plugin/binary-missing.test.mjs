// The package as npm installs it, with the platform binary missing, broken or present
// (issue 14 "a missing or broken binary for the user's platform gives one clear error naming
// the platform and the package that should provide it; the plugin disables itself").
//
// Each case lays out a throwaway node_modules/ (c2c-bridge copied from the package's `files`,
// plus, where the case says so, a c2c-bridge-<platform> package) and runs the plugin's
// `server()` and `require('c2c-bridge')` in a fresh child process, so no module cache is shared.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { afterAll, describe, expect, test } from 'vitest';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');
const PKG = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'));
// This suite runs on the project's Linux x64 glibc machines; the platform name is napi-rs's.
const onLinuxGnu = process.platform === 'linux' && process.arch === 'x64' && !!process.report?.getReport()?.header?.glibcVersionRuntime;
const PLATFORM = 'linux-x64-gnu';
const PLATFORM_PKG = `c2c-bridge-${PLATFORM}`;
const NODE_FILE = `c2c-bridge.${PLATFORM}.node`;
const BUILT = path.join(ROOT, NODE_FILE);

const tmps = [];
afterAll(() => {
  for (const t of tmps) fs.rmSync(t, { recursive: true, force: true });
});

/** node_modules/c2c-bridge with exactly the package's `files` (no `.node`), in a temp project. */
function installedPackage() {
  const project = fs.mkdtempSync(path.join(os.tmpdir(), 'c2c-binary-'));
  tmps.push(project);
  const dest = path.join(project, 'node_modules', 'c2c-bridge');
  fs.mkdirSync(dest, { recursive: true });
  fs.copyFileSync(path.join(ROOT, 'package.json'), path.join(dest, 'package.json'));
  for (const f of PKG.files) {
    if (f.includes('*')) throw new Error(`files entry ${f}: this test copies plain paths only`);
    fs.cpSync(path.join(ROOT, f), path.join(dest, f), { recursive: true });
  }
  expect(fs.readdirSync(dest, { recursive: true }).filter((f) => String(f).endsWith('.node'))).toEqual([]);
  return { project, dest };
}

/** node_modules/c2c-bridge-<platform> from npm/<platform>/ with the given binary bytes. */
function platformPackage(project, bytes) {
  const dest = path.join(project, 'node_modules', PLATFORM_PKG);
  fs.mkdirSync(dest, { recursive: true });
  fs.copyFileSync(path.join(ROOT, 'npm', PLATFORM, 'package.json'), path.join(dest, 'package.json'));
  fs.writeFileSync(path.join(dest, NODE_FILE), bytes);
  return dest;
}

const junk = () => Buffer.from(Array.from({ length: 4096 }, (_, i) => (i * 131 + 7) & 0xff));

/** Run the plugin's server() and require('c2c-bridge') in a child process of the project. */
function probe(project) {
  const script = `
    const out = { logs: [], stderr: [] };
    const write = process.stderr.write.bind(process.stderr);
    process.stderr.write = (s) => { out.stderr.push(String(s)); return true; };
    const client = {
      app: { log: async ({ body }) => { out.logs.push(body); } },
      session: { promptAsync: async () => ({}) },
      permission: { reply: async () => ({}) },
      postSessionIdPermissionsPermissionId: async () => ({}),
    };
    const mod = await import('c2c-bridge/server');
    const hooks = await mod.default.server({ client, directory: process.cwd(), worktree: process.cwd() }, { alias: 'probe', brokerRoot: process.env.PROBE_BROKER });
    await new Promise((r) => setTimeout(r, 50));
    out.hookNames = Object.keys(hooks);
    await hooks.dispose?.();
    try {
      const { createRequire } = await import('node:module');
      const lib = createRequire(process.cwd() + '/x.js')('c2c-bridge');
      out.lib = { ok: typeof lib.Broker?.open === 'function' };
    } catch (e) {
      out.lib = { ok: false, message: e.message, code: e.code, platform: e.platform, package: e.package };
    }
    process.stderr.write = write;
    console.log(JSON.stringify(out));
  `;
  const broker = fs.mkdtempSync(path.join(os.tmpdir(), 'c2c-binary-broker-'));
  tmps.push(broker);
  const r = spawnSync(process.execPath, ['--input-type=module', '-e', script], {
    cwd: project,
    env: { ...process.env, PROBE_BROKER: path.join(broker, 'b'), NAPI_RS_NATIVE_LIBRARY_PATH: '' },
    encoding: 'utf8',
    timeout: 60_000,
  });
  expect(r.status, r.stderr).toBe(0);
  return JSON.parse(r.stdout.trim().split('\n').pop());
}

const DISABLED = 'disabled: the native addon could not be loaded';

describe.skipIf(!onLinuxGnu)('the platform binary of an installed c2c-bridge', () => {
  test('missing (no platform package): one error naming the platform and the package; plugin disabled', () => {
    const { project } = installedPackage();
    const out = probe(project);
    expect(out.hookNames).toEqual([]);
    const errors = out.logs.filter((l) => l.level === 'error');
    expect(errors).toHaveLength(1);
    expect(out.logs).toHaveLength(1);
    const msg = errors[0].message;
    expect(msg.startsWith(DISABLED)).toBe(true);
    expect(msg).toContain(`the prebuilt binary for ${PLATFORM} is missing`);
    expect(msg).toContain(`the package ${PLATFORM_PKG}`);
    expect(msg).not.toContain('Cannot find native binding');
    expect(out.stderr.filter((l) => l.includes(DISABLED))).toHaveLength(1);
    // A library consumer gets the same diagnosis as a typed error.
    expect(out.lib).toMatchObject({ ok: false, code: 'C2C_BINARY_MISSING', platform: PLATFORM, package: PLATFORM_PKG });
  });

  test('broken (platform package holds garbage): the error names the package and the loader reason', () => {
    const { project } = installedPackage();
    platformPackage(project, junk());
    const out = probe(project);
    expect(out.hookNames).toEqual([]);
    const errors = out.logs.filter((l) => l.level === 'error');
    expect(errors).toHaveLength(1);
    expect(errors[0].message).toContain(`the prebuilt binary for ${PLATFORM} from the package ${PLATFORM_PKG}`);
    expect(errors[0].message).toMatch(/does not load: .*(invalid ELF header|too short)/);
    expect(out.lib).toMatchObject({ ok: false, code: 'C2C_BINARY_BROKEN', platform: PLATFORM, package: PLATFORM_PKG });
  });

  test.skipIf(!fs.existsSync(BUILT))('present in c2c-bridge-<platform>: the generated loader finds it and the plugin runs', () => {
    const { project } = installedPackage();
    platformPackage(project, fs.readFileSync(BUILT));
    const out = probe(project);
    expect(out.logs.filter((l) => l.level === 'error')).toEqual([]);
    expect(out.hookNames).toContain('tool');
    expect(out.hookNames).toContain('event');
    expect(out.lib).toEqual({ ok: true });
  });
});

describe('the package layout (napi-rs standard: one npm package per platform)', () => {
  const dirs = fs.readdirSync(path.join(ROOT, 'npm')).sort();
  test('npm/<platform>/package.json for each napi target, with os/cpu(/libc), main = the .node file, no scripts', () => {
    expect(dirs).toEqual(['darwin-arm64', 'darwin-x64', 'linux-arm64-gnu', 'linux-x64-gnu', 'linux-x64-musl', 'win32-x64-msvc']);
    expect(PKG.napi.targets).toHaveLength(dirs.length);
    for (const d of dirs) {
      const p = JSON.parse(fs.readFileSync(path.join(ROOT, 'npm', d, 'package.json'), 'utf8'));
      expect(p.name).toBe(`c2c-bridge-${d}`);
      expect(p.version).toBe(PKG.version);
      expect(p.main).toBe(`c2c-bridge.${d}.node`);
      expect(p.files).toEqual([`c2c-bridge.${d}.node`]);
      expect(p.os).toEqual([d.split('-')[0]]);
      expect(p.cpu).toEqual([d.split('-')[1]]);
      if (d.startsWith('linux-')) expect(p.libc).toEqual([d.endsWith('-musl') ? 'musl' : 'glibc']);
      expect(p.scripts).toBeUndefined();
    }
  });
  test('no install script in the main package; files hold no source, target or tests', () => {
    for (const s of ['preinstall', 'install', 'postinstall', 'prepare']) expect(PKG.scripts?.[s]).toBeUndefined();
    for (const f of PKG.files) expect(f).not.toMatch(/^(src|target|__tests__|tests|npm|scripts)\b|\.node$/);
  });
});
