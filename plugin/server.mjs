// The OpenCode entry point of c2c-bridge (package.json `exports["./server"]`), hand-written
// so it exists in an unbuilt checkout too: it loads the compiled plugin (plugin/dist/) and,
// when that is missing or fails to load, logs one line saying to run `npm run build` and
// disables itself without taking OpenCode down (issue 18).
//
// OpenCode 1.18.33 calls every export of a module without a default `{id, server}` as a
// plugin: this module exports nothing else.
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';

const ID = 'c2c-bridge';
const dist = new URL('./dist/index.mjs', import.meta.url);
const checkout = fileURLToPath(new URL('..', import.meta.url));

let loaded;
let problem;
if (!existsSync(dist)) {
  problem = `this checkout is not built (${fileURLToPath(dist)} is missing): run \`npm run build\` in ${checkout}, then restart OpenCode`;
} else {
  try {
    loaded = (await import(dist.href)).default;
  } catch (err) {
    problem = `the plugin could not be loaded (${err instanceof Error ? err.message : String(err)}): run \`npm run build\` in ${checkout}, then restart OpenCode`;
  }
}

/** Stand-in when the compiled plugin is unavailable: one log line, no hooks. */
async function disabled(input) {
  const message = `disabled: ${problem}. OpenCode continues without c2c-bridge.`;
  try {
    process.stderr.write(`[${ID}] error: ${message}\n`);
  } catch {
    // ignore
  }
  // OpenCode's own log, once the plugin function has returned (earlier calls deadlock).
  setTimeout(() => {
    try {
      void input?.client?.app?.log?.({ body: { service: ID, level: 'error', message } })?.catch?.(() => {});
    } catch {
      // logging must never throw
    }
  }, 0);
  return {};
}

export default loaded ?? { id: ID, server: disabled };
