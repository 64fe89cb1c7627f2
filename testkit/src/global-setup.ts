import { backendProviders, planBackends } from './backends/plan.js';
import type { BackendAvailability } from './backends/types.js';
import type { TestkitEnv } from './etcd-binary.js';

/**
 * One line per backend: whether suites will run it, and why not. Throws when `ETCDKIT_BACKENDS`
 * names an unknown backend, or when ETCDKIT_REQUIRE_REAL_ETCD=1 and an etcd binary is missing
 * (the one etcd, or any that `ETCDKIT_ETCD_BINS` lists).
 */
export function backendReport(env: TestkitEnv = process.env): string[] {
  if (env.ETCDKIT_REQUIRE_REAL_ETCD?.trim() === '1') {
    const reasons = backendProviders(env)
      .filter((provider) => provider.name === 'etcd')
      .map((provider) => provider.availability(env))
      .flatMap((availability: BackendAvailability) =>
        availability.available ? [] : [availability.reason],
      );
    if (reasons.length > 0) {
      throw new Error(
        `ETCDKIT_REQUIRE_REAL_ETCD=1 but the real etcd backend cannot run: ${reasons.join('; ')}. ` +
          'Install etcd (Debian: apt-get install etcd-server etcd-client; etcd 3.5: ' +
          '.ci/install-etcd-3.5.sh) or set ETCDKIT_ETCD_BIN (ETCDKIT_ETCD_BINS for several).',
      );
    }
  }
  return planBackends({ env }).map((plan) => {
    const backend = `[etcdkit] backend ${plan.label}`;
    if (plan.status === 'run') return `${backend}: available (${plan.detail})`;
    if (plan.status === 'skip') return `${backend}: skipped (${plan.reason})`;
    return `${backend}: REQUIRED but unavailable (${plan.reason})`;
  });
}

/** Vitest global setup: reports the backends once per run, before any test file loads. */
export default function setup(): void {
  for (const line of backendReport()) console.log(line);
}
