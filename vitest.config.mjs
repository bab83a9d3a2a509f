// Vitest configuration for c2c-bridge.
//
// Only our own test files are picked up (cargo tests and any other runner's files stay out).
// `fileParallelism: false` runs test files one after another: the addon tests spawn child
// processes and the e2e tests under __tests__/e2e/ (OpenCode instances) must not overlap;
// the whole addon suite still runs in a few seconds, so the serial order costs little.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['__tests__/**/*.test.{mjs,ts}'],
    pool: 'forks',
    testTimeout: 30000,
    fileParallelism: false,
  },
});
