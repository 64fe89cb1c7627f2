import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import {
  type BackendProvider,
  backendReport,
  containerBackend,
  embeddedBackend,
  etcdFeatures,
  externalBackend,
  externalEndpoints,
  findEtcdBinary,
  listedEtcdBinaries,
  planBackends,
  type TestBackend,
} from '../src/index.js';
import { noEtcd } from './helpers.js';

/** A script that answers `--version` as etcd 3.5.99 does, and nothing else. */
const FAKE_ETCD_35 = fileURLToPath(new URL('./fixtures/fake-etcd-3.5.sh', import.meta.url));
const MISSING_ETCD = { PATH: '/nonexistent', ETCDKIT_ETCD_BIN: '/nonexistent/etcd' };

function fakeProvider(name: BackendProvider['name'], available: boolean): BackendProvider {
  return {
    name,
    startTimeoutMs: 1_000,
    availability: () =>
      available
        ? { available: true, detail: `${name} here` }
        : { available: false, reason: `no ${name}` },
    start: async (): Promise<TestBackend> => {
      throw new Error('not started in these tests');
    },
  };
}

describe('planBackends', () => {
  const providers = [
    fakeProvider('embedded', true),
    fakeProvider('etcd', true),
    fakeProvider('external', false),
  ];

  it('runs available backends and skips the others with their reason', () => {
    expect(planBackends({ env: {}, providers }).map(({ name, status }) => [name, status])).toEqual([
      ['embedded', 'run'],
      ['etcd', 'run'],
      ['external', 'skip'],
    ]);
    expect(planBackends({ env: {}, providers })[2]).toEqual({
      name: 'external',
      label: 'external',
      status: 'skip',
      reason: 'no external',
    });
  });

  it('ETCDKIT_BACKENDS restricts the run and says so', () => {
    const plans = planBackends({ env: { ETCDKIT_BACKENDS: 'etcd' }, providers });

    expect(plans.map((plan) => plan.status)).toEqual(['skip', 'run', 'skip']);
    expect(plans[0]).toMatchObject({ reason: 'not selected by ETCDKIT_BACKENDS=etcd' });
  });

  it('rejects unknown names in ETCDKIT_BACKENDS', () => {
    expect(() => planBackends({ env: { ETCDKIT_BACKENDS: 'etcd,zookeeper' }, providers })).toThrow(
      'ETCDKIT_BACKENDS names unknown backends: zookeeper (known: embedded, etcd, external, container)',
    );
  });

  it('a suite limited with `only` reports the other backends as skipped', () => {
    const plans = planBackends({ env: {}, providers, only: ['embedded'] });

    expect(plans.map((plan) => plan.status)).toEqual(['run', 'skip', 'skip']);
    expect(plans[1]).toMatchObject({ reason: 'this suite runs only on embedded' });
  });

  it('ETCDKIT_REQUIRE_REAL_ETCD=1 turns a missing real etcd into a failure', () => {
    const plans = planBackends({
      env: { ETCDKIT_REQUIRE_REAL_ETCD: '1' },
      providers: [fakeProvider('etcd', false), fakeProvider('external', false)],
    });

    expect(plans).toEqual([
      {
        name: 'etcd',
        label: 'etcd',
        status: 'fail',
        reason: 'ETCDKIT_REQUIRE_REAL_ETCD=1 but no etcd',
      },
      { name: 'external', label: 'external', status: 'skip', reason: 'no external' },
    ]);
  });
});

describe('several etcd versions (ETCDKIT_ETCD_BINS)', () => {
  const listed = {
    PATH: '/nonexistent',
    ETCDKIT_ETCD_BINS: ` ${FAKE_ETCD_35}, /nonexistent/etcd,`,
  };
  const etcdPlans = (env: Record<string, string>) =>
    planBackends({ env }).filter((plan) => plan.name === 'etcd');

  it('lists the comma-separated binaries; the first is the default one, ETCDKIT_ETCD_BIN wins', () => {
    expect(listedEtcdBinaries(listed)).toEqual([FAKE_ETCD_35, '/nonexistent/etcd']);
    expect(listedEtcdBinaries({})).toEqual([]);
    expect(findEtcdBinary(listed)).toEqual({
      found: true,
      binary: { path: FAKE_ETCD_35, version: '3.5.99' },
    });
    expect(findEtcdBinary({ ...listed, ETCDKIT_ETCD_BIN: '/nonexistent/bin' })).toEqual({
      found: false,
      reason: 'ETCDKIT_ETCD_BIN=/nonexistent/bin is not an executable file',
    });
  });

  it('plans one etcd backend per binary, named with its version, or its path when it is missing', () => {
    expect(etcdPlans(listed)).toEqual([
      expect.objectContaining({
        label: 'etcd 3.5.99',
        status: 'run',
        detail: `etcd 3.5.99 at ${FAKE_ETCD_35}`,
      }),
      {
        name: 'etcd',
        label: 'etcd /nonexistent/etcd',
        status: 'skip',
        reason: 'ETCDKIT_ETCD_BINS entry /nonexistent/etcd is not an executable file',
      },
    ]);
    expect(etcdPlans({ ...listed, ETCDKIT_REQUIRE_REAL_ETCD: '1' })[1]).toEqual({
      name: 'etcd',
      label: 'etcd /nonexistent/etcd',
      status: 'fail',
      reason:
        'ETCDKIT_REQUIRE_REAL_ETCD=1 but ETCDKIT_ETCD_BINS entry /nonexistent/etcd is not an executable file',
    });
  });

  it('without ETCDKIT_ETCD_BINS there is one etcd backend, named `etcd`', () => {
    expect(
      etcdPlans({ ETCDKIT_ETCD_BIN: FAKE_ETCD_35 }).map(({ label, status }) => [label, status]),
    ).toEqual([['etcd', 'run']]);
  });

  it('the global setup names each version, and fails a required run when one is missing', () => {
    expect(backendReport(listed).slice(1, 3)).toEqual([
      `[etcdkit] backend etcd 3.5.99: available (etcd 3.5.99 at ${FAKE_ETCD_35})`,
      '[etcdkit] backend etcd /nonexistent/etcd: skipped (ETCDKIT_ETCD_BINS entry /nonexistent/etcd is not an executable file)',
    ]);
    expect(() => backendReport({ ...listed, ETCDKIT_REQUIRE_REAL_ETCD: '1' })).toThrow(
      /^ETCDKIT_REQUIRE_REAL_ETCD=1 but the real etcd backend cannot run: ETCDKIT_ETCD_BINS entry \/nonexistent\/etcd is not an executable file\. Install etcd/,
    );
  });
});

describe('backend providers', () => {
  it('embedded is always available, and starts a server that answers', async () => {
    expect(embeddedBackend.availability({})).toEqual({
      available: true,
      detail: 'in-process @etcdkit/server-embedded',
    });
    const backend = await embeddedBackend.start({});
    try {
      // The server's default version, etcd 3.5, has no RangeStream.
      expect([backend.name, backend.version, backend.features.rangeStream]).toEqual([
        'embedded',
        '3.5.30',
        false,
      ]);
      expect(backend.endpoints).toHaveLength(1);
      expect(backend.endpoints[0]).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
    } finally {
      await backend.stop();
    }
  });

  it('embedded answers as ETCDKIT_EMBEDDED_ETCD_VERSION', async () => {
    const backend = await embeddedBackend.start({ ETCDKIT_EMBEDDED_ETCD_VERSION: '3.7' });
    try {
      expect([backend.version, backend.features.rangeStream]).toEqual(['3.7.0', true]);
    } finally {
      await backend.stop();
    }
    await expect(embeddedBackend.start({ ETCDKIT_EMBEDDED_ETCD_VERSION: '3.3' })).rejects.toThrow(
      /unknown etcd version "3.3"/,
    );
  });

  it('external is available when ETCDKIT_ENDPOINTS lists endpoints', () => {
    expect(externalBackend.availability({})).toEqual({
      available: false,
      reason: 'ETCDKIT_ENDPOINTS is not set',
    });
    expect(externalBackend.availability({ ETCDKIT_ENDPOINTS: 'http://a:1, http://b:2,' })).toEqual({
      available: true,
      detail: 'ETCDKIT_ENDPOINTS=http://a:1,http://b:2',
    });
    expect(externalEndpoints(' http://a:1 ,,http://b:2 ')).toEqual(['http://a:1', 'http://b:2']);
  });

  it('container must be requested, then needs Docker', () => {
    expect(containerBackend.availability({})).toMatchObject({
      available: false,
      reason: expect.stringMatching(/^not requested: set ETCDKIT_BACKEND=container/),
    });
    const noDocker = {
      ETCDKIT_BACKEND: 'container',
      HOME: '/nonexistent',
      XDG_RUNTIME_DIR: '/nonexistent',
    };
    const availability = containerBackend.availability(noDocker);
    // This machine may or may not have a Docker socket; without one the reason says so.
    if (!availability.available) expect(availability.reason).toMatch(/^Docker is not available/);
    expect(
      containerBackend.availability({
        ETCDKIT_BACKENDS: 'container',
        DOCKER_HOST: 'tcp://127.0.0.1:1',
      }),
    ).toEqual({
      available: true,
      detail: 'gcr.io/etcd-development/etcd:v3.6.16 via DOCKER_HOST=tcp://127.0.0.1:1',
    });
  });

  it('container start fails with a clear reason when Docker does not answer', async () => {
    await expect(
      containerBackend.start({
        ETCDKIT_BACKEND: 'container',
        DOCKER_HOST: 'tcp://127.0.0.1:1',
        ETCDKIT_ETCD_IMAGE: 'example.invalid/etcd:none',
      }),
    ).rejects.toThrow(
      /backend container is unavailable: could not start example.invalid\/etcd:none/,
    );
  }, 60_000);

  it('rangeStream is a feature of etcd 3.7 and later', () => {
    expect(etcdFeatures('3.4.23').rangeStream).toBe(false);
    expect(etcdFeatures('3.6.16').rangeStream).toBe(false);
    expect(etcdFeatures('3.7.0').rangeStream).toBe(true);
    expect(etcdFeatures('v3.10.1').rangeStream).toBe(true);
    expect(etcdFeatures('unknown').rangeStream).toBe(false);
  });
});

describe('backendReport (global setup)', () => {
  it('prints one line per backend with why it is skipped', () => {
    expect(backendReport({ ...MISSING_ETCD })).toEqual([
      '[etcdkit] backend embedded: available (in-process @etcdkit/server-embedded)',
      '[etcdkit] backend etcd: skipped (ETCDKIT_ETCD_BIN=/nonexistent/etcd is not an executable file)',
      '[etcdkit] backend external: skipped (ETCDKIT_ENDPOINTS is not set)',
      '[etcdkit] backend container: skipped (not requested: set ETCDKIT_BACKEND=container to run against a container)',
    ]);
  });

  it.skipIf(noEtcd)('says which etcd binary will run', () => {
    expect(backendReport({ PATH: process.env.PATH })[1]).toMatch(
      /^\[etcdkit\] backend etcd: available \(etcd \d+\.\d+\.\d+ at \/.*etcd\)$/,
    );
  });

  it('throws when ETCDKIT_REQUIRE_REAL_ETCD=1 and there is no etcd binary', () => {
    expect(() => backendReport({ ...MISSING_ETCD, ETCDKIT_REQUIRE_REAL_ETCD: '1' })).toThrow(
      /^ETCDKIT_REQUIRE_REAL_ETCD=1 but the real etcd backend cannot run: ETCDKIT_ETCD_BIN=\/nonexistent\/etcd is not an executable file\. Install etcd/,
    );
  });
});
