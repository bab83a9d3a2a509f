// Start and stop real headless `opencode serve` processes for end-to-end tests.
//
// Each instance gets a private temp root (HOME and the four XDG dirs), a project opencode.json
// that points OpenCode's built-in `@ai-sdk/openai-compatible` provider at the mock model, and a
// seeded global config dir so OpenCode skips its background `npm install @opencode-ai/plugin`
// (see FACTS.md for the exact skip rule). The process runs in its own process group; `stop()`
// kills the group, and a process `exit` hook kills whatever a crashed test left behind.

import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { fileURLToPath, pathToFileURL } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));
/** Repo root: __tests__/e2e/harness → ../../.. */
export const REPO_ROOT = path.resolve(HERE, '..', '..', '..');
/** The pinned OpenCode binary (npm `opencode-linux-x64`). Override with OPENCODE_BIN. */
export const OPENCODE_BIN =
  process.env.OPENCODE_BIN ?? path.join(REPO_ROOT, 'node_modules', 'opencode-linux-x64', 'bin', 'opencode');

/** Variables that keep OpenCode off the network and away from the user's own setup. */
export const HERMETIC_ENV = {
  OPENCODE_DISABLE_MODELS_FETCH: '1',
  OPENCODE_DISABLE_AUTOUPDATE: '1',
  OPENCODE_DISABLE_SHARE: '1',
  OPENCODE_DISABLE_LSP_DOWNLOAD: '1',
  OPENCODE_DISABLE_DEFAULT_PLUGINS: '1',
  OPENCODE_DISABLE_CLAUDE_CODE: '1',
};

/** Provider id and model id used in the generated config: the model is `mock/m`. */
export const PROVIDER_ID = 'mock';
export const MODEL_ID = 'm';

/** @type {Set<OpencodeHandle>} live instances, killed on process exit */
const live = new Set();
let exitHookInstalled = false;
function installExitHook() {
  if (exitHookInstalled) return;
  exitHookInstalled = true;
  process.on('exit', () => {
    for (const h of live) {
      h.killNow();
      h.removeTempSync();
    }
  });
  for (const sig of /** @type {const} */ (['SIGINT', 'SIGTERM', 'SIGHUP'])) {
    const onSignal = () => {
      for (const h of live) h.killNow();
      process.removeListener(sig, onSignal);
      // Only re-raise when nobody else handles the signal, so the default action still happens.
      if (process.listenerCount(sig) === 0) process.kill(process.pid, sig);
    };
    process.on(sig, onSignal);
  }
}

/** Ask the OS for a free TCP port on 127.0.0.1 (listen on 0, read it, close). */
export function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.unref();
    srv.once('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = /** @type {net.AddressInfo} */ (srv.address());
      srv.close(() => resolve(port));
    });
  });
}

/**
 * Make OpenCode's startup `npm install @opencode-ai/plugin` into `dir` a no-op.
 * OpenCode 1.18.33 skips it when `dir/node_modules` exists and every dependency named in
 * `dir/package.json` (plus `@opencode-ai/plugin`) is listed in `package-lock.json`'s
 * `packages[""]`. Contents of node_modules and versions are not checked.
 * @param {string} dir
 */
export function seedConfigDir(dir) {
  fs.mkdirSync(path.join(dir, 'node_modules'), { recursive: true });
  const deps = { '@opencode-ai/plugin': '1.18.33' };
  const pkgPath = path.join(dir, 'package.json');
  if (!fs.existsSync(pkgPath)) fs.writeFileSync(pkgPath, JSON.stringify({ dependencies: deps }, null, 2));
  const lockPath = path.join(dir, 'package-lock.json');
  if (!fs.existsSync(lockPath)) {
    fs.writeFileSync(
      lockPath,
      JSON.stringify({ name: 'opencode', lockfileVersion: 3, requires: true, packages: { '': { dependencies: deps } } }, null, 2),
    );
  }
}

/**
 * A plugin spec for opencode.json: a path (made a file:// URL), a URL/npm spec string, or a
 * [spec, options] tuple.
 * @typedef {string | [string, any]} PluginSpec
 */

/** @param {PluginSpec} p */
function pluginEntry(p) {
  const norm = (/** @type {string} */ s) => (path.isAbsolute(s) ? pathToFileURL(s).href : s);
  return Array.isArray(p) ? [norm(p[0]), p[1]] : norm(p);
}

/**
 * Build the project opencode.json.
 * @param {{modelBaseURL: string, plugins?: PluginSpec[], permission?: any, config?: any}} o
 */
export function buildConfig(o) {
  const cfg = {
    $schema: 'https://opencode.ai/config.json',
    provider: {
      [PROVIDER_ID]: {
        npm: '@ai-sdk/openai-compatible',
        name: 'Mock',
        options: { baseURL: o.modelBaseURL, apiKey: 'mock-key' },
        models: {
          [MODEL_ID]: { name: 'Mock model', tool_call: true, limit: { context: 100000, output: 4096 } },
        },
      },
    },
    model: `${PROVIDER_ID}/${MODEL_ID}`,
    small_model: `${PROVIDER_ID}/${MODEL_ID}`,
    autoupdate: false,
    share: 'disabled',
    plugin: (o.plugins ?? []).map(pluginEntry),
    ...(o.permission ? { permission: o.permission } : {}),
  };
  // Shallow merge of top-level keys; `config` wins.
  return { ...cfg, ...(o.config ?? {}) };
}

/**
 * @typedef {object} StartOptions
 * @property {string} [projectDir]     project directory (created in the temp root when omitted)
 * @property {string} [root]           reuse this temp root (HOME + XDG dirs, and `project/` when
 *                                     projectDir is omitted) instead of making a new one, e.g. a
 *                                     stopped instance's `handle.root` to restart OpenCode on the
 *                                     same sessions (they live under XDG_DATA_HOME). The caller
 *                                     owns it: `stop()` never deletes a root given here.
 * @property {string} modelBaseURL     e.g. mock.baseURL('a') → http://127.0.0.1:P/t/a/v1
 * @property {PluginSpec[]} [plugins]  opencode.json `plugin` entries
 * @property {any} [permission]        opencode.json `permission`, e.g. {bash: 'ask'}
 * @property {any} [config]            extra top-level opencode.json keys (override the defaults)
 * @property {Record<string,string>} [env]  extra environment for the server
 * @property {boolean} [git]           `git init` the project dir (default false)
 * @property {boolean} [seed]          seed the global config dir to skip OpenCode's npm install (default true)
 * @property {boolean} [writeConfig]   write opencode.json (default true)
 * @property {string} [logLevel]       DEBUG | INFO | WARN | ERROR (default INFO)
 * @property {number} [readyTimeoutMs] default 60000
 * @property {boolean} [keepTemp]      keep the temp root after stop (default: env E2E_KEEP_TEMP)
 * @property {(line: string) => void} [onLog]  called for each stdout/stderr line
 */

/**
 * @typedef {object} OpencodeHandle
 * @property {string} url              http://127.0.0.1:PORT
 * @property {number} port
 * @property {number} pid              process (and process-group) id
 * @property {string} projectDir       the instance directory; pass it as `directory`
 * @property {string} root             temp root holding home/ config/ data/ cache/ state/
 * @property {Record<string,string>} env  the environment the server runs with
 * @property {{startMs: number, listenMs: number, readyMs: number}} timings  ms since spawn
 * @property {() => string} logs       everything the server printed so far
 * @property {(path: string, init?: RequestInit) => Promise<Response>} fetch  fetch with ?directory=
 * @property {() => Promise<void>} stop  SIGTERM the group, SIGKILL after 3 s, remove temp root
 * @property {() => void} killNow      synchronous SIGKILL of the group (exit hook)
 * @property {() => void} removeTempSync  delete the temp root now unless keepTemp (exit hook)
 * @property {Promise<number|null>} exited  resolves with the exit code
 */

/**
 * Start `opencode serve` and wait until the instance for `projectDir` exists (plugins loaded).
 * @param {StartOptions} opts
 * @returns {Promise<OpencodeHandle>}
 */
export async function startOpencode(opts) {
  if (!opts || !opts.modelBaseURL) throw new Error('startOpencode: modelBaseURL is required');
  if (!fs.existsSync(OPENCODE_BIN)) throw new Error(`startOpencode: no OpenCode binary at ${OPENCODE_BIN} (run npm ci)`);
  installExitHook();
  const ownRoot = !opts.root;
  const root = fs.realpathSync(
    opts.root ? (fs.mkdirSync(opts.root, { recursive: true }), opts.root) : fs.mkdtempSync(path.join(os.tmpdir(), 'oc-e2e-')),
  );
  const dirs = {
    HOME: path.join(root, 'home'),
    XDG_CONFIG_HOME: path.join(root, 'config'),
    XDG_DATA_HOME: path.join(root, 'data'),
    XDG_CACHE_HOME: path.join(root, 'cache'),
    XDG_STATE_HOME: path.join(root, 'state'),
  };
  for (const d of Object.values(dirs)) fs.mkdirSync(d, { recursive: true });
  if (opts.seed !== false) seedConfigDir(path.join(dirs.XDG_CONFIG_HOME, 'opencode'));

  const projectDir = opts.projectDir ? path.resolve(opts.projectDir) : path.join(root, 'project');
  fs.mkdirSync(projectDir, { recursive: true });
  const realProject = fs.realpathSync(projectDir);
  // A project `.opencode/` dir is another config dir OpenCode installs into.
  if (opts.seed !== false && fs.existsSync(path.join(realProject, '.opencode'))) seedConfigDir(path.join(realProject, '.opencode'));
  if (opts.writeConfig !== false) {
    const cfg = buildConfig(opts);
    fs.writeFileSync(path.join(realProject, 'opencode.json'), JSON.stringify(cfg, null, 2));
  }
  if (opts.git) {
    const { execFileSync } = await import('node:child_process');
    execFileSync('git', ['init', '-q', realProject]);
  }

  const port = await freePort();
  /** @type {Record<string,string>} */
  const env = {
    PATH: process.env.PATH ?? '/usr/bin:/bin',
    LANG: process.env.LANG ?? 'C.UTF-8',
    TMPDIR: os.tmpdir(),
    ...dirs,
    ...HERMETIC_ENV,
    ...(opts.env ?? {}),
  };
  const args = ['serve', '--port', String(port), '--hostname', '127.0.0.1', '--print-logs', '--log-level', opts.logLevel ?? 'INFO'];
  const t0 = Date.now();
  const child = spawn(OPENCODE_BIN, args, { cwd: realProject, env, detached: true, stdio: ['ignore', 'pipe', 'pipe'] });
  const pid = /** @type {number} */ (child.pid);
  /** @type {string[]} */
  const out = [];
  let outSize = 0;
  const MAX_LOG = 4 * 1024 * 1024;
  let listened = false;
  /** @type {(v?: unknown) => void} */
  let onListen = () => {};
  const listening = new Promise((r) => (onListen = r));
  const url = `http://127.0.0.1:${port}`;
  const feed = (/** @type {Buffer} */ buf) => {
    const s = buf.toString('utf8');
    out.push(s);
    outSize += s.length;
    while (outSize > MAX_LOG && out.length > 1) outSize -= /** @type {string} */ (out.shift()).length;
    if (!listened && s.includes('listening on')) {
      listened = true;
      onListen();
    }
    if (opts.onLog) for (const line of s.split('\n')) if (line) opts.onLog(line);
  };
  child.stdout.on('data', feed);
  child.stderr.on('data', feed);
  let exitCode = /** @type {number|null|undefined} */ (undefined);
  const exited = new Promise((resolve) => {
    child.on('exit', (code, signal) => {
      exitCode = code ?? (signal ? -1 : null);
      live.delete(handle);
      resolve(code);
    });
  });
  const killGroup = (/** @type {NodeJS.Signals} */ sig) => {
    try {
      process.kill(-pid, sig);
    } catch {
      /* already gone */
    }
  };
  const keepTemp = !ownRoot || (opts.keepTemp ?? !!process.env.E2E_KEEP_TEMP);
  let stopping = /** @type {Promise<void>|null} */ (null);

  /** @type {OpencodeHandle} */
  const handle = {
    url,
    port,
    pid,
    projectDir: realProject,
    root,
    env,
    timings: { startMs: 0, listenMs: -1, readyMs: -1 },
    logs: () => out.join(''),
    fetch: (p, init = {}) => fetch(withDirectory(url + p, realProject), init),
    killNow: () => killGroup('SIGKILL'),
    removeTempSync: () => {
      if (keepTemp) return;
      try {
        fs.rmSync(root, { recursive: true, force: true });
      } catch {
        /* the dying server may still be writing; best effort */
      }
    },
    exited: /** @type {Promise<number|null>} */ (exited),
    stop: () =>
      (stopping ??= (async () => {
        if (exitCode === undefined) {
          killGroup('SIGTERM');
          const timer = setTimeout(() => killGroup('SIGKILL'), 3000);
          await exited;
          clearTimeout(timer);
          // The bash tool's children may outlive the leader; sweep the group.
          killGroup('SIGKILL');
        }
        live.delete(handle);
        if (!keepTemp) fs.rmSync(root, { recursive: true, force: true, maxRetries: 3 });
      })()),
  };
  live.add(handle);

  const timeoutMs = opts.readyTimeoutMs ?? 60000;
  try {
    await raceExit(
      withTimeout(listening, timeoutMs, 'waiting for "listening"'),
      exited,
      () => handle.logs(),
    );
    handle.timings.listenMs = Date.now() - t0;
    // "listening" comes before any instance exists. The first request naming the directory
    // creates the instance: config load, plugin import and plugin init all happen inside it.
    const deadline = t0 + timeoutMs;
    for (;;) {
      if (exitCode !== undefined) throw new Error(`opencode exited (${exitCode}) during startup\n${tail(handle.logs())}`);
      try {
        const res = await fetch(withDirectory(`${url}/config`, realProject), {
          signal: AbortSignal.timeout(Math.max(1000, deadline - Date.now())),
        });
        if (res.ok) {
          await res.json();
          break;
        }
      } catch {
        /* not up yet */
      }
      if (Date.now() > deadline) throw new Error(`opencode not ready after ${timeoutMs} ms\n${tail(handle.logs())}`);
      await new Promise((r) => setTimeout(r, 100));
    }
    handle.timings.readyMs = Date.now() - t0;
  } catch (err) {
    await handle.stop();
    throw err;
  }
  return handle;
}

/** @param {string} u @param {string} dir */
export function withDirectory(u, dir) {
  const url = new URL(u);
  if (!url.searchParams.has('directory')) url.searchParams.set('directory', dir);
  return url.href;
}

/** @param {string} s */
function tail(s, n = 4000) {
  return s.length > n ? '…' + s.slice(-n) : s;
}

/** @template T @param {Promise<T>} p @param {number} ms @param {string} what @returns {Promise<T>} */
function withTimeout(p, ms, what) {
  /** @type {NodeJS.Timeout} */
  let t;
  return Promise.race([
    p.finally(() => clearTimeout(t)),
    new Promise((_, rej) => (t = setTimeout(() => rej(new Error(`timeout after ${ms} ms ${what}`)), ms))),
  ]);
}

/** @template T @param {Promise<T>} p @param {Promise<any>} exited @param {() => string} logs */
function raceExit(p, exited, logs) {
  return Promise.race([
    p,
    exited.then((code) => {
      throw new Error(`opencode exited (${code}) during startup\n${tail(logs())}`);
    }),
  ]);
}
