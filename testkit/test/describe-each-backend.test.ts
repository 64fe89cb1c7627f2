import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { describeEachBackend, EtcdHttpGateway } from '../src/index.js';

const seenPrefixes: string[] = [];

describeEachBackend('describeEachBackend', ({ name, backend, prefix }) => {
  it('hands tests the started backend', () => {
    const started = backend();

    expect(started.name).toBe(name);
    expect(started.endpoints.length).toBeGreaterThan(0);
    expect(started.version).not.toBe('');
  });

  it('gives a test one prefix, the same on every call', () => {
    seenPrefixes.push(prefix());

    expect(prefix()).toMatch(/^t\/[0-9a-f]{12}\/$/);
    expect(prefix()).toBe(prefix());
  });

  it('gives the next test another prefix', () => {
    expect(seenPrefixes).not.toContain(prefix());
  });

  it.runIf(name === 'etcd')('keys under the prefix are visible through the backend', async () => {
    const gateway = new EtcdHttpGateway(backend().endpoints[0]!);

    await gateway.put(`${prefix()}greeting`, 'hello');

    expect(await gateway.get(`${prefix()}greeting`)).toBe('hello');
  });
});

interface AssertionResult {
  readonly ancestorTitles: readonly string[];
  readonly title: string;
  readonly status: string;
}

/** The tests of a vitest JSON report, in file order. */
function assertionResults(report: unknown): AssertionResult[] {
  const files: unknown =
    typeof report === 'object' && report !== null ? Reflect.get(report, 'testResults') : undefined;
  if (!Array.isArray(files)) throw new Error('not a vitest JSON report');
  return files.flatMap((file: unknown) => {
    const tests: unknown =
      typeof file === 'object' && file !== null ? Reflect.get(file, 'assertionResults') : undefined;
    if (!Array.isArray(tests)) return [];
    return tests.map((test: unknown): AssertionResult => {
      const field = (name: string): unknown =>
        typeof test === 'object' && test !== null ? Reflect.get(test, name) : undefined;
      const ancestors = field('ancestorTitles');
      return {
        ancestorTitles: Array.isArray(ancestors) ? ancestors.map(String) : [],
        title: String(field('title')),
        status: String(field('status')),
      };
    });
  });
}

/** Runs the fixture suite in a child vitest with `env` and returns every test's result. */
async function runFixture(env: Record<string, string>): Promise<AssertionResult[]> {
  const outDir = await mkdtemp(join(tmpdir(), 'etcdkit-fixture-'));
  try {
    const outputFile = join(outDir, 'report.json');
    const vitest = fileURLToPath(new URL('../../node_modules/vitest/vitest.mjs', import.meta.url));
    const config = fileURLToPath(new URL('./fixtures/vitest.config.ts', import.meta.url));
    const childEnv: Record<string, string> = {};
    for (const [key, value] of Object.entries(process.env)) {
      if (value === undefined || key.startsWith('ETCDKIT_') || key.startsWith('VITEST')) continue;
      childEnv[key] = value;
    }
    const exitCode = await new Promise<number | null>((resolve, reject) => {
      const child = spawn(
        process.execPath,
        [vitest, 'run', '--config', config, '--reporter=json', '--outputFile', outputFile],
        { env: { ...childEnv, ...env }, stdio: 'ignore' },
      );
      child.once('error', reject);
      child.once('exit', resolve);
    });
    const results = assertionResults(JSON.parse(await readFile(outputFile, 'utf8')));
    expect(exitCode).toBe(results.some((result) => result.status === 'failed') ? 1 : 0);
    return results;
  } finally {
    await rm(outDir, { recursive: true, force: true });
  }
}

describe('describeEachBackend reporting', () => {
  it('reports unavailable backends as skipped tests named with the reason, and a required missing etcd as a failure', async () => {
    const results = await runFixture({
      ETCDKIT_ETCD_BIN: '/nonexistent/etcd',
      ETCDKIT_REQUIRE_REAL_ETCD: '1',
    });

    expect(
      results.map((result) => [result.ancestorTitles.join(' > '), result.title, result.status]),
    ).toEqual([
      ['fixture suite [backend: embedded]', 'has a started backend', 'passed'],
      [
        'fixture suite [backend: etcd]',
        'backend is required but unavailable: ETCDKIT_REQUIRE_REAL_ETCD=1 but ETCDKIT_ETCD_BIN=/nonexistent/etcd is not an executable file',
        'failed',
      ],
      ['fixture suite [backend: external]', 'skipped: ETCDKIT_ENDPOINTS is not set', 'skipped'],
      [
        'fixture suite [backend: container]',
        'skipped: not requested: set ETCDKIT_BACKEND=container to run against a container',
        'skipped',
      ],
    ]);
  }, 60_000);
});
