// Covers plugin/src/options.mts + index.mts (issue 18): configuration mistakes are reported
// once per instance (one log line, one toast), turn auto-answers off when they may touch
// permissions, and show in /peers with the broker root in use and why. The validation itself
// is Rust's (src/config/tests.rs); here the real plugin function runs with a fake client.
import { afterAll, describe, expect, test } from 'vitest';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import plugin from '../../plugin/dist/index.mjs';
import { describeOptionErrors, plainEnv, readOptions, reportOptionErrors } from '../../plugin/dist/options.mjs';
import { addon } from '../helpers/broker.mjs';

const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'c2c-opts-'));
fs.chmodSync(tmp, 0o700);
afterAll(() => fs.rmSync(tmp, { recursive: true, force: true }));

let seq = 0;
/** Start the plugin with `options`; returns its hooks and what it sent to the client. */
async function start(options, reuse) {
  seq += 1;
  const dir = reuse?.dir ?? path.join(tmp, `p${seq}`);
  fs.mkdirSync(dir, { recursive: true });
  const known = reuse?.known ?? [];
  const logs = [];
  const toasts = [];
  const client = {
    app: { async log({ body }) { logs.push(body); } },
    tui: { async showToast({ body }) { toasts.push(body); } },
    session: {
      async get({ path: p }) { return known.includes(p.id) ? { data: { id: p.id, title: 't' } } : { error: { name: 'NotFound' } }; },
      async messages() { return { data: [] }; },
      async status() { return { data: {} }; },
      async promptAsync() { return { response: { status: 204 } }; },
    },
  };
  const brokerRoot = reuse?.brokerRoot ?? path.join(tmp, `root${seq}`);
  const hooks = await plugin.server(
    { client, directory: dir, worktree: dir, serverUrl: new URL('http://127.0.0.1:9') },
    { brokerRoot, ...options },
  );
  await new Promise((r) => setTimeout(r, 20)); // the deferred report
  return { hooks, logs, toasts, brokerRoot, dir };
}

const configLines = (logs) => logs.filter((l) => l.message.includes('configuration error'));

async function peersText(hooks, sessionID) {
  const output = { parts: [] };
  await hooks['command.execute.before']({ command: 'peers', sessionID, arguments: '' }, output);
  return output.parts[0].text;
}

describe('configuration errors', () => {
  test('an unknown key: one log line, one toast, auto-answers off, shown by /peers', async () => {
    const { hooks, logs, toasts, brokerRoot } = await start({ peerPermission: 'deny' });
    const created = (id) => ({ event: { type: 'session.created', properties: { info: { id, title: 't' } } } });
    await hooks.event(created('ses_opts1'));
    await hooks.event(created('ses_opts2'));
    await hooks.event({ event: { type: 'session.idle', properties: { sessionID: 'ses_opts1' } } });
    const text = await peersText(hooks, 'ses_opts1');
    await new Promise((r) => setTimeout(r, 20));
    const lines = configLines(logs);
    expect(lines).toHaveLength(1);
    expect(lines[0].level).toBe('error');
    expect(lines[0].message).toContain('E_UNKNOWN_OPTION unknown option "peerPermission"; did you mean "peerPermissions"?');
    expect(lines[0].message).toContain('auto-answers are OFF');
    expect(toasts).toHaveLength(1);
    expect(toasts[0]).toMatchObject({ variant: 'error' });
    expect(toasts[0].message).toBe(lines[0].message);
    expect(text).toContain('auto-answers are OFF');
    expect(text).toContain('configuration error: E_UNKNOWN_OPTION');
    expect(text).toContain(`broker root: ${fs.realpathSync(brokerRoot)} — set explicitly`);
    await hooks.dispose();
  });

  test.each([[false, 'E_OPTION_TYPE'], ['alow', 'E_OPTION_VALUE']])('peerPermissions: %j turns auto-answers off (%s)', async (value, code) => {
    const { hooks, logs, toasts } = await start({ peerPermissions: value });
    const lines = configLines(logs);
    expect(lines).toHaveLength(1);
    expect(lines[0].message).toContain(`${code} peerPermissions is`);
    expect(lines[0].message).toContain('auto-answers are OFF');
    expect(toasts).toHaveLength(1);
    expect(await peersText(hooks, 'ses_unregistered')).toContain('peerPermissions: off — auto-answers are OFF');
    await hooks.dispose();
  });

  test('a wrong type in a limit is reported but leaves auto-answers on', async () => {
    const { hooks, logs, toasts } = await start({ maxMessageBytes: '16k' });
    const lines = configLines(logs);
    expect(lines).toHaveLength(1);
    expect(lines[0].message).toContain('E_OPTION_TYPE maxMessageBytes is a string ("16k")');
    expect(lines[0].message).toContain('the defaults apply');
    expect(toasts).toHaveLength(1);
    await hooks.dispose();
  });

  test('valid options: no configuration line, no toast', async () => {
    const { hooks, logs, toasts } = await start({ peerPermissions: 'ask', maxMessageBytes: 4096 });
    expect(configLines(logs)).toHaveLength(0);
    expect(toasts).toHaveLength(0);
    await hooks.dispose();
  });

  test('dispose unregisters the sessions; a restart restores the same alias', async () => {
    const first = await start({ alias: 'backend' });
    const ev = (id) => ({ event: { type: 'session.created', properties: { info: { id, title: 't' } } } });
    await first.hooks.event(ev('ses_keep1'));
    await first.hooks.event(ev('ses_keep2'));
    const registry = () => JSON.parse(fs.readFileSync(path.join(first.brokerRoot, 'registry.json'), 'utf8'));
    expect(registry().map((r) => r.alias).sort()).toEqual(['backend', 'backend-2']);
    await first.hooks.dispose();
    expect(registry()).toEqual([]);
    // Restart: both sessions are restored from the alias book, with their aliases, and a
    // new session takes the next suffix.
    const second = await start({ alias: 'backend' }, { dir: first.dir, brokerRoot: first.brokerRoot, known: ['ses_keep1', 'ses_keep2'] });
    await new Promise((r) => setTimeout(r, 50));
    await second.hooks.event(ev('ses_keep3'));
    expect(registry().map((r) => [r.session_id, r.alias]).sort()).toEqual([
      ['ses_keep1', 'backend'], ['ses_keep2', 'backend-2'], ['ses_keep3', 'backend-3'],
    ]);
    await second.hooks.dispose();
  });
});

describe('a broker root made insecure and then fixed is picked up without a restart', () => {
  test('registration happens at the next event', async () => {
    const dir = path.join(tmp, 'insecure-project');
    fs.mkdirSync(dir);
    const brokerRoot = path.join(tmp, 'insecure-root');
    fs.mkdirSync(brokerRoot);
    fs.chmodSync(brokerRoot, 0o777);
    const logs = [];
    const client = {
      app: { async log({ body }) { logs.push(body.message); } },
      session: {
        async get({ path: p }) { return { data: { id: p.id, title: 't' } }; },
        async messages() { return { data: [] }; },
        async status() { return { data: {} }; },
        async promptAsync() { return { response: { status: 204 } }; },
      },
    };
    const hooks = await plugin.server({ client, directory: dir, worktree: dir, serverUrl: new URL('http://127.0.0.1:9') }, { brokerRoot });
    await hooks.event({ event: { type: 'session.created', properties: { info: { id: 'ses_ins1', title: 't' } } } });
    await new Promise((r) => setTimeout(r, 20)); // the logger's backlog reaches app.log
    expect(logs.join('\n')).toContain('cannot register session ses_ins1: E_ROOT_INSECURE');
    expect(fs.existsSync(path.join(brokerRoot, 'registry.json'))).toBe(false);
    fs.chmodSync(brokerRoot, 0o700);
    await hooks.event({ event: { type: 'session.idle', properties: { sessionID: 'ses_ins1' } } });
    expect(JSON.parse(fs.readFileSync(path.join(brokerRoot, 'registry.json'), 'utf8')).map((r) => r.session_id)).toEqual(['ses_ins1']);
    await hooks.dispose();
  });

  test('the gate audits again once the root is fixed', async () => {
    const { createRequire } = await import('node:module');
    const addon = createRequire(import.meta.url)('../../index.js');
    const dir = path.join(tmp, 'audit-project');
    fs.mkdirSync(dir);
    const brokerRoot = path.join(tmp, 'audit-root');
    fs.mkdirSync(brokerRoot);
    fs.chmodSync(brokerRoot, 0o777);
    const gate = new addon.PermissionGate({ directory: dir, brokerRoot, env: {} });
    expect(gate.auditError).toContain('not safe');
    fs.chmodSync(brokerRoot, 0o700);
    await new Promise((r) => setTimeout(r, 1100)); // the gate retries at most once a second
    const d = gate.decide('asked', { id: 'per_x', sessionID: 'ses_x', permission: 'bash', patterns: [], metadata: {}, always: [] });
    expect(d.action).toBe('leave');
    expect(gate.auditError).toBeNull();
    expect(gate.auditPath).toBe(path.join(fs.realpathSync(brokerRoot), 'broker.log'));
    expect(fs.readFileSync(gate.auditPath, 'utf8')).toContain('"request":"per_x"');
  });
});

describe('options.mts on its own: Rust validates, the plugin only maps and reports', () => {
  test('defaults of the plugin-side timings; the environment wins over an option', () => {
    const { options, report } = readOptions(addon, { alias: 'opt-alias', inbound: 'auto' }, { C2C_BRIDGE_ALIAS: 'env-alias', C2C_SUPERVISORS: 'lead, ops' });
    expect(options).toMatchObject({ alias: 'env-alias', inbound: 'auto', supervisors: ['lead', 'ops'], fallbackIntervalMs: 2000, retryBaseMs: 500 });
    expect(report).toEqual({ errors: [], autoAnswersOff: false, fromEnv: expect.arrayContaining(['alias', 'supervisors']) });
    expect(readOptions(addon, { fallbackIntervalMs: 250, retryBaseMs: 40 }, {}).options).toMatchObject({ fallbackIntervalMs: 250, retryBaseMs: 40 });
    expect(readOptions(addon, undefined, {}).report.errors).toEqual([]);
  });

  test('mistakes come back as Rust reports them; a wrong value never reads as "not set"', () => {
    const { options, report } = readOptions(addon, { inbound: 'sometimes', heldCap: 'lots' }, {});
    expect(options.inbound).toBe('hold');
    expect(report.errors.map((e) => [e.code, e.option])).toEqual(expect.arrayContaining([['E_OPTION_VALUE', 'inbound'], ['E_OPTION_TYPE', 'heldCap']]));
    const text = describeOptionErrors(report);
    expect(text).toMatch(/^configuration error in the c2c-bridge options: E_OPTION_/);
    expect(describeOptionErrors({ errors: [], autoAnswersOff: false, fromEnv: [] })).toBeUndefined();
  });

  test('reportOptionErrors: one error line and one toast; nothing when fine; a throwing toast is harmless', () => {
    const report = readOptions(addon, { peerPermission: 'deny' }, {}).report;
    expect(report.autoAnswersOff).toBe(true);
    const lines = [];
    const toasts = [];
    const logger = { log: (l, m) => lines.push([l, m]) };
    reportOptionErrors(report, logger, { tui: { showToast: async ({ body }) => { toasts.push(body); } } });
    expect(lines).toHaveLength(1);
    expect(lines[0][1]).toContain('auto-answers are OFF');
    expect(toasts).toEqual([{ title: 'c2c-bridge configuration', message: lines[0][1], variant: 'error' }]);
    reportOptionErrors({ errors: [], autoAnswersOff: false, fromEnv: [] }, logger, undefined);
    expect(lines).toHaveLength(1);
    expect(() => reportOptionErrors(report, logger, { tui: { showToast() { throw new Error('no tui'); } } })).not.toThrow();
  });

  test('plainEnv keeps only string values (what native code can be handed under Bun)', () => {
    expect(plainEnv({ A: '1', B: undefined, C: '' })).toEqual({ A: '1', C: '' });
  });
});
