// The e2e harness in one import: mock model, OpenCode launcher, HTTP/SSE client.
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
