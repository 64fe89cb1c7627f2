import { randomBytes } from 'node:crypto';
import { afterAll, beforeAll, beforeEach, describe, it } from 'vitest';
import { planBackends } from './backends/plan.js';
import type { BackendName, TestBackend } from './backends/types.js';
import { BackendUnavailableError } from './errors.js';
import type { TestkitEnv } from './etcd-binary.js';

/** What a suite body gets from {@link describeEachBackend}. */
export interface BackendSuiteContext {
  /** Which backend this copy of the suite runs against; known while collecting tests. */
  readonly name: BackendName;
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
 * Declares `body` once per backend, as `describe("<title> [backend: <name>]")`. A backend that
 * cannot run still appears, as one skipped test named `skipped: <reason>`; a required real etcd
 * that is missing (ETCDKIT_REQUIRE_REAL_ETCD=1) appears as one failing test.
 */
export function describeEachBackend(
  title: string,
  body: (context: BackendSuiteContext) => void,
  options: DescribeEachBackendOptions = {},
): void {
  for (const plan of planBackends({ env: options.env, only: options.only })) {
    const suiteTitle = `${title} [backend: ${plan.name}]`;
    if (plan.status !== 'run') {
      describeUnavailable(suiteTitle, plan.name, plan.status, plan.reason);
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
      body({
        name: plan.name,
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
      });
    });
  }
}

/**
 * Declares a suite that needs the real etcd binary itself: it starts its own servers (with
 * particular flags, several members) to kill, pause or restart them. Without a binary it appears as
 * one skipped test named with the reason; with ETCDKIT_REQUIRE_REAL_ETCD=1 as one failing test;
 * ETCDKIT_BACKENDS can deselect it like the `etcd` backend.
 */
export function describeRealEtcd(
  title: string,
  body: () => void,
  options: Pick<DescribeEachBackendOptions, 'env'> = {},
): void {
  const suiteTitle = `${title} [backend: etcd]`;
  const plan = planBackends({ env: options.env, only: ['etcd'] }).find((p) => p.name === 'etcd');
  if (plan?.status === 'run') {
    describe(suiteTitle, body);
    return;
  }
  describeUnavailable(
    suiteTitle,
    'etcd',
    plan?.status ?? 'skip',
    plan?.reason ?? 'no etcd backend is known',
  );
}

/** The visible stand-in of a suite whose backend cannot run: skipped by name, or failing. */
function describeUnavailable(
  suiteTitle: string,
  name: BackendName,
  status: 'skip' | 'fail',
  reason: string,
): void {
  describe(suiteTitle, () => {
    if (status === 'fail') {
      it(`backend is required but unavailable: ${reason}`, () => {
        throw new BackendUnavailableError(name, reason);
      });
    } else {
      it.skip(`skipped: ${reason}`, () => {});
    }
  });
}
