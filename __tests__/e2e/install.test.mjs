// The real install path (issue 14): the packed tarballs (main package + the host platform
// package) are published to a local registry (verdaccio on 127.0.0.1, started and stopped
// here); two real `opencode serve` 1.18.33 whose config names the plugin only as
// `"plugin": ["c2c-bridge"]`, whose npm config (~/.npmrc) points at that registry and whose
// PATH has no cargo or rustc, install the plugin themselves (docs/opencode-plugin-install.md),
// load the prebuilt binary from `c2c-bridge-<platform>`, and their sessions exchange a peer
// message. The aliases and the shared broker root come from the environment
// (C2C_BRIDGE_ALIAS, C2C_MCP_BROKER_ROOT), since the config carries no plugin options.
import { spawn, spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { client, freePort, startMockModel, startOpencode, waitFor, REPO_ROOT } from './harness/index.mjs';
import { installTestTools, toolBin } from '../tools/install.mjs';
import { hostPlatform, pack } from '../../scripts/pack.mjs';

const PLATFORM = hostPlatform();
const VERSION = JSON.parse(fs.readFileSync(path.join(REPO_ROOT, 'package.json'), 'utf8')).version;

/** PATH without any directory that holds cargo or rustc. */
function pathWithoutRust() {
  return (process.env.PATH ?? '/usr/bin:/bin')
    .split(':')
    .filter((d) => d && !['cargo', 'rustc'].some((t) => fs.existsSync(path.join(d, t))))
    .join(':');
}

/** Start verdaccio on a free loopback port with no uplink; resolves once it answers. */
async function startRegistry(dir) {
  const port = await freePort();
  const config = path.join(dir, 'config.yaml');
  fs.writeFileSync(config, [
    `storage: ${path.join(dir, 'storage')}`,
    'auth:',
    '  htpasswd:',
    `    file: ${path.join(dir, 'htpasswd')}`,
    'uplinks: {}',
    'packages:',
    "  '**':",
    '    access: $all',
    '    publish: $authenticated',
    'log: { type: stdout, format: pretty, level: warn }',
    '',
  ].join('\n'));
  const child = spawn(toolBin('verdaccio'), ['--config', config, '--listen', `127.0.0.1:${port}`], {
    cwd: dir,
    stdio: ['ignore', 'pipe', 'pipe'],
    detached: true,
  });
  let log = '';
  child.stdout.on('data', (d) => (log += d));
  child.stderr.on('data', (d) => (log += d));
  const url = `http://127.0.0.1:${port}`;
  await waitFor(async () => {
    if (child.exitCode !== null) throw new Error(`verdaccio exited ${child.exitCode}: ${log}`);
    try {
      return (await fetch(`${url}/-/ping`)).ok;
    } catch {
      return false;
    }
  }, { message: 'verdaccio ready', timeoutMs: 60_000 });
  const stop = async () => {
    if (child.exitCode !== null) return;
    const gone = new Promise((r) => child.once('exit', r));
    try {
      process.kill(-child.pid, 'SIGTERM');
    } catch {}
    const t = setTimeout(() => {
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {}
    }, 3000);
    await gone;
    clearTimeout(t);
  };
  return { url, port, stop, logs: () => log };
}

/** Register a throwaway user on the registry and return an npmrc that can publish. */
async function publisherNpmrc(reg, dir) {
  const res = await fetch(`${reg.url}/-/user/org.couchdb.user:publisher`, {
    method: 'PUT',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ name: 'publisher', password: 'publisher-pass-1' }),
  });
  const body = await res.json();
  if (!body.token) throw new Error(`no token from verdaccio: ${JSON.stringify(body)}`);
  const file = path.join(dir, 'publish.npmrc');
  fs.writeFileSync(file, `registry=${reg.url}/\n//127.0.0.1:${reg.port}/:_authToken=${body.token}\n`);
  return file;
}

const tmps = [];
function tmpdir(prefix) {
  const d = fs.mkdtempSync(path.join(os.tmpdir(), prefix));
  tmps.push(d);
  return d;
}

describe.skipIf(process.platform !== 'linux')('OpenCode installs c2c-bridge from a registry, with no Rust toolchain', () => {
  let reg;
  let mock;
  let tarballs;
  const servers = [];
  const timings = {};

  beforeAll(async () => {
    let t = Date.now();
    installTestTools();
    timings.tools = Date.now() - t;
    const work = tmpdir('c2c-install-');
    t = Date.now();
    tarballs = pack({ out: path.join(work, 'tarballs'), platforms: PLATFORM, allowHostBuild: true, log: () => {} });
    timings.pack = Date.now() - t;
    expect(tarballs.map((r) => r.name)).toEqual(['c2c-bridge', `c2c-bridge-${PLATFORM}`]);
    t = Date.now();
    reg = await startRegistry(path.join(work));
    const npmrc = await publisherNpmrc(reg, work);
    // the platform package first: the main package's optionalDependencies point at it
    for (const r of [...tarballs].reverse()) {
      const p = spawnSync('npm', ['publish', r.file, '--userconfig', npmrc, '--registry', `${reg.url}/`, '--provenance=false'], { encoding: 'utf8' });
      expect(p.status, `npm publish ${r.name}: ${p.stderr}`).toBe(0);
    }
    timings.registry = Date.now() - t;
    mock = await startMockModel({
      script: (r) => {
        const text = r.lastUserText;
        if (r.instance === 'a') {
          if (r.lastIsToolResult) return { text: 'A: message sent.' };
          if (text.includes('ask bob')) return { toolCalls: [{ name: 'peer_send', arguments: { to: 'bob', text: 'installed from the registry?' } }] };
          if (text.includes('[c2c-frame')) return { text: 'A: got the answer from bob.' };
        }
        if (r.instance === 'b') {
          if (r.lastIsToolResult) return { text: 'B: replied.' };
          if (text.includes('[c2c-frame') && text.includes('installed from the registry?')) {
            return { toolCalls: [{ name: 'peer_send', arguments: { to: 'alice', text: 'yes, prebuilt' } }] };
          }
        }
        return { text: `unscripted: ${text.slice(0, 40)}` };
      },
    });
  }, 600_000);

  afterAll(async () => {
    await Promise.allSettled(servers.map((s) => s.stop()));
    await mock?.stop();
    await reg?.stop();
    for (const d of tmps) fs.rmSync(d, { recursive: true, force: true });
    console.log(`[install] tools ${timings.tools} ms, pack ${timings.pack} ms, registry+publish ${timings.registry} ms, opencode start+install ${timings.start} ms`);
  });

  test('the published main package is small, has no install script, and lists every platform package', () => {
    const main = tarballs[0];
    expect(main.files.some((f) => /^(src|target|__tests__|tests|npm)\//.test(f) || f.endsWith('.node'))).toBe(false);
    expect(main.files).toContain('binding.js');
    expect(main.files).toContain('plugin/dist/index.mjs');
    const meta = spawnSync('tar', ['xzf', main.file, '-O', 'package/package.json'], { encoding: 'utf8' });
    const pkg = JSON.parse(meta.stdout);
    expect(pkg.scripts).toBeUndefined();
    expect(pkg.optionalDependencies).toEqual(Object.fromEntries(
      ['linux-x64-gnu', 'linux-x64-musl', 'linux-arm64-gnu', 'darwin-x64', 'darwin-arm64', 'win32-x64-msvc'].map((p) => [`c2c-bridge-${p}`, VERSION]),
    ));
    expect(tarballs[1].files.sort()).toEqual(['README.md', `c2c-bridge.${PLATFORM}.node`, 'package.json']);
  });

  test('"plugin": ["c2c-bridge"]: OpenCode installs it, loads the prebuilt binary, two sessions exchange a message', async () => {
    const PATH = pathWithoutRust();
    expect(spawnSync('sh', ['-c', 'command -v cargo || command -v rustc'], { env: { PATH } }).status).not.toBe(0);
    const brokerRoot = path.join(tmpdir('c2c-install-broker-'), 'broker');
    fs.mkdirSync(brokerRoot, { mode: 0o700 });
    const start = async (alias, instance) => {
      const root = tmpdir(`c2c-install-oc-${alias}-`);
      fs.mkdirSync(path.join(root, 'home'), { recursive: true });
      // what a user does to use another registry: ~/.npmrc (OpenCode reads npm's config)
      fs.writeFileSync(path.join(root, 'home', '.npmrc'), `registry=${reg.url}/\n`);
      const oc = await startOpencode({
        root,
        modelBaseURL: mock.baseURL(instance),
        plugins: ['c2c-bridge'],
        env: { PATH, C2C_BRIDGE_ALIAS: alias, C2C_MCP_BROKER_ROOT: brokerRoot },
        readyTimeoutMs: 300_000,
      });
      servers.push(oc);
      return { oc, root };
    };
    const t = Date.now();
    const [A, B] = await Promise.all([start('alice', 'a'), start('bob', 'b')]);
    timings.start = Date.now() - t;

    // Where and what OpenCode installed: its cache, one folder per plugin spec, with the
    // platform package beside the main one and no binary inside the main one.
    for (const { root } of [A, B]) {
      const nm = path.join(root, 'cache', 'opencode', 'packages', 'c2c-bridge@latest', 'node_modules');
      expect(JSON.parse(fs.readFileSync(path.join(nm, 'c2c-bridge', 'package.json'), 'utf8')).version).toBe(VERSION);
      expect(fs.existsSync(path.join(nm, `c2c-bridge-${PLATFORM}`, `c2c-bridge.${PLATFORM}.node`))).toBe(true);
      expect(fs.readdirSync(path.join(nm, 'c2c-bridge')).filter((f) => f.endsWith('.node'))).toEqual([]);
    }

    const a = client(A.oc);
    const b = client(B.oc);
    const sa = await a.createSession({ title: 'A' });
    const sb = await b.createSession({ title: 'B' });
    for (const oc of [A.oc, B.oc]) {
      await waitFor(() => /registered session ses_\S+ as (alice|bob)/.test(oc.logs()), { message: 'plugin registered its session', timeoutMs: 30_000 });
      expect(oc.logs()).not.toContain('disabled: the native addon could not be loaded');
    }
    await a.promptAsync(sa.id, 'ask bob if it was installed from the registry');
    const peer = (msgs) => msgs.filter((m) => m.info.role === 'user').flatMap((m) => m.parts.filter((p) => p.type === 'text' && p.metadata?.peerMessage));
    const inB = await waitFor(async () => {
      const p = peer(await b.messages(sb.id));
      return p.length ? p : false;
    }, { message: 'peer message in B', timeoutMs: 60_000 });
    expect(inB).toHaveLength(1);
    expect(inB[0].metadata.peerMessage.from).toBe('alice');
    expect(inB[0].text).toContain('installed from the registry?');
    const inA = await waitFor(async () => {
      const p = peer(await a.messages(sa.id));
      return p.length ? p : false;
    }, { message: 'answer in A', timeoutMs: 60_000 });
    expect(inA).toHaveLength(1);
    expect(inA[0].metadata.peerMessage.from).toBe('bob');
    expect(inA[0].text).toContain('yes, prebuilt');
  });
});
