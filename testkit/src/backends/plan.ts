import type { TestkitEnv } from '../etcd-binary.js';
import { containerBackend } from './container.js';
import { embeddedBackend } from './embedded.js';
import { etcdBackend } from './etcd.js';
import { externalBackend } from './external.js';
import { BACKEND_NAMES, type BackendName, type BackendProvider } from './types.js';

/** Every provider, in {@link BACKEND_NAMES} order. */
export const BACKEND_PROVIDERS: readonly BackendProvider[] = [
  embeddedBackend,
  etcdBackend,
  externalBackend,
  containerBackend,
];

/** What a suite does with one backend. */
export type BackendPlan =
  /** Run the suite against it. */
  | {
      readonly name: BackendName;
      readonly status: 'run';
      readonly provider: BackendProvider;
      readonly detail: string;
    }
  /** Report it as skipped, with the reason. */
  | { readonly name: BackendName; readonly status: 'skip'; readonly reason: string }
  /** Report a failure: it is required (ETCDKIT_REQUIRE_REAL_ETCD=1) but cannot run. */
  | { readonly name: BackendName; readonly status: 'fail'; readonly reason: string };

/** Options of {@link planBackends}. */
export interface PlanOptions {
  /** Environment to read; default `process.env`. */
  readonly env?: TestkitEnv;
  /** Backends this suite applies to; the others are reported as skipped. Default all. */
  readonly only?: readonly BackendName[];
  /** Providers to consider; default {@link BACKEND_PROVIDERS}. For the testkit's own tests. */
  readonly providers?: readonly BackendProvider[];
}

/**
 * Decides, for every backend, whether a suite runs it, skips it (and why) or fails because it
 * is required. Reads `ETCDKIT_BACKENDS` (comma list restricting the run) and
 * `ETCDKIT_REQUIRE_REAL_ETCD=1` (a missing real etcd is a failure, not a skip).
 */
export function planBackends(options: PlanOptions = {}): BackendPlan[] {
  const env = options.env ?? process.env;
  const selected = selectedBackends(env);
  const requireRealEtcd = env.ETCDKIT_REQUIRE_REAL_ETCD?.trim() === '1';
  return (options.providers ?? BACKEND_PROVIDERS).map((provider): BackendPlan => {
    const name = provider.name;
    if (options.only !== undefined && !options.only.includes(name)) {
      return { name, status: 'skip', reason: `this suite runs only on ${options.only.join(', ')}` };
    }
    if (selected !== undefined && !selected.includes(name)) {
      return {
        name,
        status: 'skip',
        reason: `not selected by ETCDKIT_BACKENDS=${env.ETCDKIT_BACKENDS}`,
      };
    }
    const availability = provider.availability(env);
    if (availability.available) {
      return { name, status: 'run', provider, detail: availability.detail };
    }
    if (name === 'etcd' && requireRealEtcd) {
      return {
        name,
        status: 'fail',
        reason: `ETCDKIT_REQUIRE_REAL_ETCD=1 but ${availability.reason}`,
      };
    }
    return { name, status: 'skip', reason: availability.reason };
  });
}

/** Names in `ETCDKIT_BACKENDS`, or undefined when unset; throws on unknown names. */
export function selectedBackends(env: TestkitEnv): BackendName[] | undefined {
  const raw = env.ETCDKIT_BACKENDS?.trim();
  if (raw === undefined || raw === '') return undefined;
  const names = raw
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  const known: readonly string[] = BACKEND_NAMES;
  const unknown = names.filter((name) => !known.includes(name));
  if (unknown.length > 0) {
    throw new Error(
      `ETCDKIT_BACKENDS names unknown backends: ${unknown.join(', ')} (known: ${BACKEND_NAMES.join(', ')})`,
    );
  }
  return BACKEND_NAMES.filter((name) => names.includes(name));
}
