import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, it } from 'vitest';
import { type BackendPlan, planBackends } from './backends/plan.js';
import type { BackendName, TestBackend } from './backends/types.js';
import { BackendUnavailableError } from './errors.js';
import { requireEtcdBinary, setSuiteEtcdBinary, type TestkitEnv } from './etcd-binary.js';

/** What a suite body gets from {@link describeEachBackend}. */
export interface BackendSuiteContext {
  /** Which backend this copy of the suite runs against; known while collecting tests. */
  readonly name: BackendName;
  /** How the suite's title names the backend: {@link name}, or a real etcd's `etcd 3.5.30`. */
  readonly label: string;
  /** The started backend. Call it inside tests or hooks; it is started in `beforeAll`. */
  backend(): TestBackend;
  /**
   * A key prefix unique to the current test, like `t/3f9a0c1b2d4e/`: the same within one test,
   * new for the next, so tests sharing a server never see each other's keys. Not for
   * `it.concurrent`, whose tests would share it.
   */
  prefix(): string;
}

/** Options of {@link describeEachBackend}. */
export interface DescribeEachBackendOptions {
  /** Backends this suite applies to (e.g. virtual time only on `embedded`). Default all. */
  readonly only?: readonly BackendName[];
  /** Environment to read; default `process.env`. */
  readonly env?: TestkitEnv;
}

/**
 * Declares `body` once per backend, as `describe("<title> [backend: <name>]")`; with
 * `ETCDKIT_ETCD_BINS` once per listed etcd binary, as `[backend: etcd 3.5.30]`, and `startEtcd()`
 * in that copy starts that binary. A backend that cannot run still appears, as one skipped test
 * named `skipped: <reason>`; a required real etcd that is missing (ETCDKIT_REQUIRE_REAL_ETCD=1)
 * appears as one failing test.
 */
export function describeEachBackend(
  title: string,
  body: (context: BackendSuiteContext) => void,
  options: DescribeEachBackendOptions = {},
): void {
  for (const plan of planBackends({ env: options.env, only: options.only })) {
    const suiteTitle = `${title} [backend: ${plan.label}]`;
    if (plan.status !== 'run') {
      describeUnavailable(suiteTitle, plan);
      continue;
    }
    describe(suiteTitle, () => {
      let started: TestBackend | undefined;
      let startError: unknown;
      let currentPrefix: string | undefined;
      beforeAll(async () => {
        try {
          started = await plan.provider.start(options.env ?? process.env);
        } catch (error) {
          startError = error;
          throw error;
        }
      }, plan.provider.startTimeoutMs);
      afterAll(async () => {
        const backend = started;
        started = undefined;
        await backend?.stop();
      });
      beforeEach(() => {
        currentPrefix = undefined;
      });
      withSuiteEtcdBinary(plan.provider.etcdBinary, () =>
        body({
          name: plan.name,
          label: plan.label,
          backend() {
            if (started !== undefined) return started;
            throw new Error(
              startError === undefined
                ? `backend ${plan.name} is not started: call backend() inside a test or hook`
                : `backend ${plan.name} failed to start`,
              { cause: startError },
            );
          },
          prefix() {
            currentPrefix ??= `t/${randomBytes(6).toString('hex')}/`;
            return currentPrefix;
          },
        }),
      );
    });
  }
}

/** What a suite body gets from {@link describeRealEtcd}. */
export interface RealEtcdSuiteContext {
  /** How the suite's title names the etcd: `etcd`, or `etcd 3.5.30` with `ETCDKIT_ETCD_BINS`. */
  readonly label: string;
  /** The binary `startEtcd()` and `startEtcdCluster()` start in this copy of the suite. */
  readonly binary: string;
}

/**
 * Declares a suite that needs the real etcd binary itself: it starts its own servers (with
 * particular flags, several members) to kill, pause or restart them. Declared once per binary
 * `ETCDKIT_ETCD_BINS` lists (`[backend: etcd 3.5.30]`), else once (`[backend: etcd]`); in each copy
 * `startEtcd()` and `startEtcdCluster()` start that copy's binary. Without a binary it appears as
 * one skipped test named with the reason; with ETCDKIT_REQUIRE_REAL_ETCD=1 as one failing test;
 * ETCDKIT_BACKENDS can deselect it like the `etcd` backend.
 */
export function describeRealEtcd(
  title: string,
  body: (context: RealEtcdSuiteContext) => void,
  options: Pick<DescribeEachBackendOptions, 'env'> = {},
): void {
  const env = options.env ?? process.env;
  const plans = planBackends({ env, only: ['etcd'] }).filter((plan) => plan.name === 'etcd');
  for (const plan of plans) {
    const suiteTitle = `${title} [backend: ${plan.label}]`;
    if (plan.status !== 'run') {
      describeUnavailable(suiteTitle, plan);
      continue;
    }
    // An unbound plan runs the default binary, which its plan found.
    const binary = plan.provider.etcdBinary ?? requireEtcdBinary(env).path;
    describe(suiteTitle, () => {
      withSuiteEtcdBinary(binary, () => body({ label: plan.label, binary }));
    });
  }
}

/**
 * Collects a suite body with `binary` (when its plan is bound to one) as what binary lookups
 * without an env find, and keeps it so while the suite's hooks and tests run: its `beforeAll` runs
 * before the body's, its `afterAll` after them (after hooks run in reverse order).
 */
function withSuiteEtcdBinary(binary: string | undefined, collect: () => void): void {
  if (binary === undefined) {
    collect();
    return;
  }
  beforeAll(() => setSuiteEtcdBinary(binary));
  afterAll(() => setSuiteEtcdBinary(undefined));
  setSuiteEtcdBinary(binary);
  try {
    collect();
  } finally {
    setSuiteEtcdBinary(undefined);
  }
}

/** The visible stand-in of a suite whose backend cannot run: skipped by name, or failing. */
function describeUnavailable(
  suiteTitle: string,
  plan: Extract<BackendPlan, { readonly status: 'skip' | 'fail' }>,
): void {
  describe(suiteTitle, () => {
    if (plan.status === 'fail') {
      it(`backend is required but unavailable: ${plan.reason}`, () => {
        throw new BackendUnavailableError(plan.label, plan.reason);
      });
    } else {
      it.skip(`skipped: ${plan.reason}`, () => {});
    }
  });
}
