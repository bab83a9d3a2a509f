// Vitest setup for c2c-bridge. End-to-end files start real `opencode serve` processes
// (~0.5–0.6 GB RSS each, ~2–3 s to start) on a 2-core machine, so files run one at a time
// in child processes and timeouts are generous.
import { defineConfig } from 'vitest/config';

export default defineConfig({
  test: {
    include: ['__tests__/**/*.test.{mjs,ts}'],
    pool: 'forks',
    fileParallelism: false,
    testTimeout: 90_000,
    hookTimeout: 120_000,
    teardownTimeout: 30_000,
  },
});
