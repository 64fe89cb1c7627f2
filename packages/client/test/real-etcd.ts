// Suites that start their own real etcd (to kill it, or with several members).
import { planBackends } from '@etcdkit/testkit';
import { describe, it } from 'vitest';

/**
 * Declares a suite that starts its own real etcd (to kill it). Without an etcd binary it is
 * reported as skipped by name (as failing with ETCDKIT_REQUIRE_REAL_ETCD=1).
 */
export function describeRealEtcd(title: string, body: () => void): void {
  const plan = planBackends({ only: ['etcd'] }).find((p) => p.name === 'etcd');
  if (plan?.status === 'run') {
    describe(`${title} [backend: etcd]`, body);
    return;
  }
  const reason = plan?.reason ?? 'no etcd backend is known';
  describe(`${title} [backend: etcd]`, () => {
    if (plan?.status === 'fail') {
      it(`backend is required but unavailable: ${reason}`, () => {
        throw new Error(reason);
      });
    } else {
      it.skip(`skipped: ${reason}`, () => {});
    }
  });
}
