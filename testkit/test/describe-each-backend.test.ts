import { spawn } from 'node:child_process';
import { mkdtemp, readFile, rm, symlink } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { describeEachBackend, EtcdHttpGateway } from '../src/index.js';
import { etcdLookup, noEtcd } from './helpers.js';

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

/** Runs a fixture file in a child vitest with `env` and returns every test's result. */
async function runFixture(file: string, env: Record<string, string>): Promise<AssertionResult[]> {
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
        [vitest, 'run', file, '--config', config, '--reporter=json', '--outputFile', outputFile],
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
    const results = await runFixture('backend-report.fixture.ts', {
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

  it.skipIf(noEtcd)(
    'with ETCDKIT_ETCD_BINS, runs each real-etcd suite once per binary, labelled, startEtcd() starting that binary; a listed binary that is missing fails by name',
    async () => {
      const outDir = await mkdtemp(join(tmpdir(), 'etcdkit-bins-'));
      try {
        const real = etcdLookup.found ? etcdLookup.binary : undefined;
        const other = join(outDir, 'etcd');
        await symlink(real!.path, other);
        const missing = join(outDir, 'missing', 'etcd');
        const results = await runFixture('etcd-versions.fixture.ts', {
          ETCDKIT_ETCD_BINS: `${real!.path},${other},${missing}`,
          ETCDKIT_REQUIRE_REAL_ETCD: '1',
        });

        const etcdAt = (path: string) => `etcd ${real!.version} (${path})`;
        const reason = `ETCDKIT_REQUIRE_REAL_ETCD=1 but ETCDKIT_ETCD_BINS entry ${missing} is not an executable file`;
        expect(
          results.map((result) => [result.ancestorTitles.join(' > '), result.title, result.status]),
        ).toEqual([
          [
            `real etcd fixture [backend: ${etcdAt(real!.path)}]`,
            'startEtcd() starts the binary of this copy',
            'passed',
          ],
          [
            `real etcd fixture [backend: ${etcdAt(other)}]`,
            'startEtcd() starts the binary of this copy',
            'passed',
          ],
          [
            `real etcd fixture [backend: etcd ${missing}]`,
            `backend is required but unavailable: ${reason}`,
            'failed',
          ],
          [
            'backend fixture [backend: embedded]',
            'skipped: this suite runs only on etcd',
            'skipped',
          ],
          [
            `backend fixture [backend: ${etcdAt(real!.path)}]`,
            'the backend and startEtcd() run the binary of this copy',
            'passed',
          ],
          [
            `backend fixture [backend: ${etcdAt(other)}]`,
            'the backend and startEtcd() run the binary of this copy',
            'passed',
          ],
          [
            `backend fixture [backend: etcd ${missing}]`,
            `backend is required but unavailable: ${reason}`,
            'failed',
          ],
          [
            'backend fixture [backend: external]',
            'skipped: this suite runs only on etcd',
            'skipped',
          ],
          [
            'backend fixture [backend: container]',
            'skipped: this suite runs only on etcd',
            'skipped',
          ],
        ]);
      } finally {
        await rm(outDir, { recursive: true, force: true });
      }
    },
    60_000,
  );
});
