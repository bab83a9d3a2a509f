// Library consumers (issue 14): a temp project installs the packed tarballs (main package +
// the host platform package) with `npm install --ignore-scripts`, no registry needed, then
// runs the fixture suites in __tests__/e2e/consumers/: Jest (CommonJS) and Vitest under the
// forks, threads and vmThreads pools, three files each that open brokers, send, watch and close.
import { spawnSync } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';
import { installTestTools, TOOLS_DIR } from '../tools/install.mjs';
import { hostPlatform, pack } from '../../scripts/pack.mjs';
import { freePort, REPO_ROOT } from './harness/index.mjs';

const FIXTURES = path.join(REPO_ROOT, '__tests__', 'e2e', 'consumers');
const VITEST = path.join(REPO_ROOT, 'node_modules', 'vitest', 'vitest.mjs');
const PLATFORM = hostPlatform();

let tmp;
let project;
const timings = {};

beforeAll(async () => {
  let t = Date.now();
  installTestTools();
  timings.tools = Date.now() - t;
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'c2c-consumer-'));
  t = Date.now();
  const tarballs = pack({ out: path.join(tmp, 'tarballs'), platforms: PLATFORM, allowHostBuild: true, log: () => {} });
  timings.pack = Date.now() - t;
  project = path.join(tmp, 'project');
  fs.mkdirSync(project);
  fs.writeFileSync(path.join(project, 'package.json'), JSON.stringify({ name: 'consumer', private: true, version: '0.0.0' }, null, 2));
  // No registry: the other platforms' optional packages cannot be fetched (a closed loopback
  // port answers at once) and npm skips them, as it skips them on a real install by os/cpu.
  const deadRegistry = `http://127.0.0.1:${await freePort()}/`;
  t = Date.now();
  const r = spawnSync('npm', ['install', '--ignore-scripts', '--no-audit', '--no-fund', '--fetch-retries=0', `--registry=${deadRegistry}`, ...tarballs.map((x) => x.file)], {
    cwd: project,
    encoding: 'utf8',
    env: { ...process.env, npm_config_cache: path.join(tmp, 'npm-cache') },
  });
  timings.install = Date.now() - t;
  expect(r.status, r.stderr).toBe(0);
  for (const d of ['jest', 'vitest']) fs.cpSync(path.join(FIXTURES, d), path.join(project, d), { recursive: true });
}, 600_000);

afterAll(() => {
  if (tmp) fs.rmSync(tmp, { recursive: true, force: true });
  console.log(`[consumers] ${JSON.stringify(timings)} ms`);
});

/** Run a command in the consumer project with a JSON report; returns the parsed report. */
function runJson(name, cmd, args, reportFile) {
  const t = Date.now();
  const r = spawnSync(cmd, args, { cwd: project, encoding: 'utf8', timeout: 300_000, env: { ...process.env, NAPI_RS_NATIVE_LIBRARY_PATH: '' } });
  timings[name] = Date.now() - t;
  let report;
  try {
    report = JSON.parse(fs.readFileSync(reportFile, 'utf8'));
  } catch {
    throw new Error(`${name}: no JSON report (exit ${r.status}): ${r.stderr.slice(-2000)}`);
  }
  return { status: r.status, report, stderr: r.stderr };
}

describe('a project that installed the tarballs', () => {
  test('the binary comes from the platform package, not from a build', () => {
    const nm = path.join(project, 'node_modules');
    expect(fs.existsSync(path.join(nm, `c2c-bridge-${PLATFORM}`, `c2c-bridge.${PLATFORM}.node`))).toBe(true);
    expect(fs.readdirSync(path.join(nm, 'c2c-bridge')).filter((f) => f.endsWith('.node'))).toEqual([]);
  });

  test('Jest (CommonJS): 3 files open brokers, send, watch and close', () => {
    const out = path.join(tmp, 'jest.json');
    const jest = path.join(TOOLS_DIR, 'node_modules', 'jest', 'bin', 'jest.js');
    const { status, report, stderr } = runJson('jest', process.execPath, [jest, '--ci', '--roots', '<rootDir>/jest', '--testMatch', '**/*.spec.cjs', '--json', `--outputFile=${out}`], out);
    expect(report.numFailedTests, stderr).toBe(0);
    expect(report.numTotalTestSuites).toBe(3);
    expect(report.numPassedTests).toBe(9);
    expect(status).toBe(0);
  });

  for (const pool of ['forks', 'threads', 'vmThreads']) {
    test(`Vitest, pool ${pool}: 3 files open brokers, send, watch and close`, () => {
      const out = path.join(tmp, `vitest-${pool}.json`);
      const { status, report, stderr } = runJson(`vitest-${pool}`, process.execPath, [
        VITEST, 'run', '--root', project, '--dir', 'vitest', '--globals', `--pool=${pool}`,
        '--reporter=json', `--outputFile=${out}`,
      ], out);
      expect(report.numFailedTests, stderr).toBe(0);
      expect(report.numTotalTestSuites).toBeGreaterThanOrEqual(3);
      expect(report.testResults).toHaveLength(3);
      expect(report.numPassedTests).toBe(9);
      expect(status).toBe(0);
    });
  }
});
