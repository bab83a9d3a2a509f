// The e2e harness in one import: mock model, OpenCode launcher, HTTP/SSE client.
// Plain Node ESM with no Vitest imports, so demo scripts can use it too.
//
//   const mock = await startMockModel({ script: (r) =>
//     r.lastIsToolResult ? { text: 'done' } : { toolCalls: [{ name: 'bash', arguments: { command: 'ls' } }] } });
//   const oc = await startOpencode({ modelBaseURL: mock.baseURL('a'), permission: { bash: 'ask' } });
//   const c = client(oc);
//   const ev = await c.events();                      // subscribe before acting
//   const s = await c.createSession();
//   await c.promptAsync(s.id, 'list files');
//   const asked = await ev.waitFor((e) => e.type === 'permission.asked');
//   await c.replyPermission(asked.properties.id, 'once');
//   await ev.waitFor((e) => e.type === 'session.idle' && e.properties.sessionID === s.id);
//   await ev.close(); await oc.stop(); await mock.stop();
export { startMockModel, describeRequest } from './mock-model.mjs';
export {
  startOpencode,
  seedConfigDir,
  buildConfig,
  freePort,
  withDirectory,
  OPENCODE_BIN,
  HERMETIC_ENV,
  PROVIDER_ID,
  MODEL_ID,
  REPO_ROOT,
} from './opencode.mjs';
export { client, events, waitFor } from './client.mjs';
