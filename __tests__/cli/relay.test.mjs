// Covers: the CLI's relay commands (issue 17) without a server: usage errors, an unreachable
// server and refused credentials files are coded errors (exit 1 or 2), never a hang. The relay
// itself against a real nats-server: tests/relay.rs and __tests__/e2e/relay.test.mjs.
import { describe, expect, test } from 'vitest';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { json, cli } from './run.mjs';

/** A loopback port with nothing listening. */
async function closedPort() {
  return new Promise((resolve) => {
    const s = net.createServer();
    s.listen(0, '127.0.0.1', () => {
      const { port } = s.address();
      s.close(() => resolve(port));
    });
  });
}

describe('relay commands', () => {
  test('usage: --url is required, and the options belong to the relay commands', () => {
    const r = cli(['relay', '--json']);
    expect(r.code).toBe(2);
    expect(json(r).error.code).toBe('E_USAGE');
    expect(json(r).error.message).toContain('--url');
    const p = cli(['peers', '--url', 'nats://127.0.0.1:1', '--json']);
    expect(p.code).toBe(2);
    expect(json(p).error.message).toContain('--url does not apply to "peers"');
    const s = cli(['relay-setup', '--url', 'nats://127.0.0.1:1', '--json']);
    expect(s.code).toBe(2);
  });

  test('an unreachable server and a world-readable creds file are coded errors', async () => {
    const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'c2c-cli-relay-'));
    try {
      const root = path.join(dir, 'root');
      fs.mkdirSync(root, { mode: 0o700 });
      const url = `nats://127.0.0.1:${await closedPort()}`;
      const r = cli(['relay', '--root', root, '--url', url, '--node', 'n1', '--json']);
      expect(r.code).toBe(1);
      expect(json(r).error.code).toBe('E_RELAY');
      expect(json(r).error.message).toContain('cannot reach');
      const creds = path.join(dir, 'n1.creds');
      fs.writeFileSync(creds, 'user=n1\npassword=x\n', { mode: 0o644 });
      const c = cli(['relay', '--root', root, '--url', url, '--creds', creds, '--json']);
      expect(c.code).toBe(1);
      expect(json(c).error.code).toBe('E_INVALID_OPTION');
      expect(json(c).error.message).toContain('chmod 600');
      const bad = cli(['relay', '--root', root, '--url', url, '--node', 'a.b', '--json']);
      expect(bad.code).toBe(1);
      expect(json(bad).error.code).toBe('E_INVALID_ID');
    } finally {
      fs.rmSync(dir, { recursive: true, force: true });
    }
  }, 40_000);
});
