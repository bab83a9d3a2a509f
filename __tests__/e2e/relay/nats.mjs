// A real nats-server (Debian's package) for the relay tests: 127.0.0.1, a random port, a temp
// JetStream store, an `admin` user and one user per node with the permissions RELAY.md lists
// (the same list as tests/relay_support/mod.rs), and connector processes run through the CLI.
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import path from 'node:path';
import { REPO_ROOT } from '../harness/index.mjs';

/** The nats-server binary, or null. */
export function natsServerPath() {
  for (const p of ['/usr/sbin/nats-server', '/usr/bin/nats-server', '/usr/local/bin/nats-server']) {
    if (fs.existsSync(p)) return p;
  }
  return null;
}

/** The publish/subscribe permissions of node `n` (RELAY.md). */
export function nodePermissions(n) {
  const pub = [
    `c2c.msg.${n}.>`, `$KV.c2c_presence.${n}`, '$JS.API.INFO',
    `$JS.API.STREAM.INFO.C2C_IN_${n}`, '$JS.API.STREAM.INFO.KV_c2c_presence',
    `$JS.API.CONSUMER.INFO.C2C_IN_${n}.relay`, `$JS.API.CONSUMER.CREATE.C2C_IN_${n}.relay`,
    `$JS.API.CONSUMER.CREATE.C2C_IN_${n}.relay.>`, `$JS.API.CONSUMER.DURABLE.CREATE.C2C_IN_${n}.relay`,
    `$JS.API.CONSUMER.MSG.NEXT.C2C_IN_${n}.relay`, `$JS.ACK.C2C_IN_${n}.relay.>`,
    '$JS.API.CONSUMER.CREATE.KV_c2c_presence', '$JS.API.CONSUMER.CREATE.KV_c2c_presence.>',
    '$JS.API.CONSUMER.DELETE.KV_c2c_presence.>', '$JS.FC.KV_c2c_presence.>',
    '$JS.API.DIRECT.GET.KV_c2c_presence.>', '$JS.API.STREAM.MSG.GET.KV_c2c_presence',
  ];
  return `permissions: { publish: { allow: ${JSON.stringify(pub)} }, subscribe: { allow: ["_INBOX_${n}.>"] } }`;
}

async function freePort() {
  return new Promise((resolve, reject) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
    s.on('error', reject);
  });
}

async function waitPort(port, ms = 20000) {
  const until = Date.now() + ms;
  for (;;) {
    const ok = await new Promise((resolve) => {
      const c = net.connect(port, '127.0.0.1', () => {
        c.end();
        resolve(true);
      });
      c.on('error', () => resolve(false));
    });
    if (ok) return;
    if (Date.now() > until) throw new Error(`nats-server did not listen on ${port}`);
    await new Promise((r) => setTimeout(r, 50));
  }
}

/** Write a 0600 creds file for `user` (password `pw-<user>`). */
export function writeCreds(dir, user) {
  const p = path.join(dir, `${user}.creds`);
  fs.writeFileSync(p, `user=${user}\npassword=pw-${user}\n`, { mode: 0o600 });
  return p;
}

/**
 * Start a server for `nodes` in `dir`; provision the nodes' streams and the presence bucket
 * with the addon (as `admin`).
 */
export async function startNats(addon, dir, nodes, { presenceTtlSecs = 5 } = {}) {
  const port = await freePort();
  const users = [`{ user: "admin", password: "pw-admin" }`, ...nodes.map((n) => `{ user: "${n}", password: "pw-${n}", ${nodePermissions(n)} }`)];
  const conf = `listen: "127.0.0.1:${port}"\njetstream { store_dir: "${path.join(dir, 'store')}" }\naccounts { C2C { jetstream: enabled, users: [\n${users.join(',\n')}\n] } }\n`;
  fs.writeFileSync(path.join(dir, 'nats.conf'), conf);
  const child = spawn(natsServerPath(), ['-c', path.join(dir, 'nats.conf')], { stdio: 'ignore' });
  await waitPort(port);
  const url = `nats://127.0.0.1:${port}`;
  const admin = writeCreds(dir, 'admin');
  const until = Date.now() + 20000;
  for (;;) {
    try {
      addon.relayProvision(url, admin, nodes, presenceTtlSecs);
      break;
    } catch (e) {
      if (Date.now() > until) throw e;
      await new Promise((r) => setTimeout(r, 200));
    }
  }
  return {
    url,
    port,
    child,
    async stop() {
      if (child.exitCode !== null) return;
      const done = new Promise((r) => child.once('exit', r));
      child.kill('SIGKILL');
      await done;
    },
  };
}

/** Run `c2c-bridge relay` for `root` as node `node` (the CLI, a child process). */
export function startConnector({ url, root, node, creds, extraArgs = [] }) {
  const cli = path.join(REPO_ROOT, 'bin', 'c2c-bridge.js');
  const child = spawn(process.execPath, [cli, 'relay', '--root', root, '--url', url, '--creds', creds, '--node', node, ...extraArgs], {
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let out = '';
  child.stdout.on('data', (d) => { out += d; });
  child.stderr.on('data', (d) => { out += d; });
  return {
    child,
    output: () => out,
    /** SIGTERM and wait; resolves to the exit code. */
    async stop() {
      if (child.exitCode !== null) return child.exitCode;
      const done = new Promise((r) => child.once('exit', (code) => r(code)));
      child.kill('SIGTERM');
      return done;
    },
  };
}
