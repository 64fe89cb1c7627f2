import { planBackends } from './backends/plan.js';
import { findEtcdBinary, type TestkitEnv } from './etcd-binary.js';

/**
 * One line per backend: whether suites will run it, and why not. Throws when `ETCDKIT_BACKENDS`
 * names an unknown backend, or when ETCDKIT_REQUIRE_REAL_ETCD=1 and there is no etcd binary.
 */
export function backendReport(env: TestkitEnv = process.env): string[] {
  if (env.ETCDKIT_REQUIRE_REAL_ETCD?.trim() === '1') {
    const lookup = findEtcdBinary(env);
    if (!lookup.found) {
      throw new Error(
        `ETCDKIT_REQUIRE_REAL_ETCD=1 but the real etcd backend cannot run: ${lookup.reason}. ` +
          'Install etcd (Debian: apt-get install etcd-server etcd-client) or set ETCDKIT_ETCD_BIN.',
      );
    }
  }
  return planBackends({ env }).map((plan) => {
    if (plan.status === 'run') return `[etcdkit] backend ${plan.name}: available (${plan.detail})`;
    if (plan.status === 'skip') return `[etcdkit] backend ${plan.name}: skipped (${plan.reason})`;
    return `[etcdkit] backend ${plan.name}: REQUIRED but unavailable (${plan.reason})`;
  });
}

/** Vitest global setup: reports the backends once per run, before any test file loads. */
export default function setup(): void {
  for (const line of backendReport()) console.log(line);
}
