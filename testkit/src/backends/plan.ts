import type { TestkitEnv } from '../etcd-binary.js';
import { containerBackend } from './container.js';
import { embeddedBackend } from './embedded.js';
import { etcdBackend, listedEtcdBackends } from './etcd.js';
import { externalBackend } from './external.js';
import { BACKEND_NAMES, type BackendName, type BackendProvider } from './types.js';

/** Every provider, in {@link BACKEND_NAMES} order. */
export const BACKEND_PROVIDERS: readonly BackendProvider[] = [
  embeddedBackend,
  etcdBackend,
  externalBackend,
  containerBackend,
];

/**
 * The providers of a run: {@link BACKEND_PROVIDERS}, with the real etcd as one provider per
 * binary when `ETCDKIT_ETCD_BINS` lists several versions.
 */
export function backendProviders(env: TestkitEnv = process.env): BackendProvider[] {
  return BACKEND_PROVIDERS.flatMap((provider) =>
    provider === etcdBackend ? (listedEtcdBackends(env) ?? [provider]) : [provider],
  );
}

/** What a suite does with one backend. */
export type BackendPlan = {
  readonly name: BackendName;
  /** How suite titles name it: the name, or a real etcd's version (`etcd 3.5.30`). */
  readonly label: string;
} & (
  | /** Run the suite against it. */
  { readonly status: 'run'; readonly provider: BackendProvider; readonly detail: string }
  /** Report it as skipped, with the reason. */
  | { readonly status: 'skip'; readonly reason: string }
  /** Report a failure: it is required (ETCDKIT_REQUIRE_REAL_ETCD=1) but cannot run. */
  | { readonly status: 'fail'; readonly reason: string }
);

/** Options of {@link planBackends}. */
export interface PlanOptions {
  /** Environment to read; default `process.env`. */
  readonly env?: TestkitEnv;
  /** Backends this suite applies to; the others are reported as skipped. Default all. */
  readonly only?: readonly BackendName[];
  /** Providers to consider; default {@link backendProviders}. For the testkit's own tests. */
  readonly providers?: readonly BackendProvider[];
}

/**
 * Decides, for every backend, whether a suite runs it, skips it (and why) or fails because it
 * is required. Reads `ETCDKIT_BACKENDS` (comma list restricting the run),
 * `ETCDKIT_REQUIRE_REAL_ETCD=1` (a missing real etcd is a failure, not a skip) and
 * `ETCDKIT_ETCD_BINS` (one real etcd backend per listed binary).
 */
export function planBackends(options: PlanOptions = {}): BackendPlan[] {
  const env = options.env ?? process.env;
  const selected = selectedBackends(env);
  const requireRealEtcd = env.ETCDKIT_REQUIRE_REAL_ETCD?.trim() === '1';
  return (options.providers ?? backendProviders(env)).map((provider): BackendPlan => {
    const name = provider.name;
    const label = provider.label ?? name;
    if (options.only !== undefined && !options.only.includes(name)) {
      const reason = `this suite runs only on ${options.only.join(', ')}`;
      return { name, label, status: 'skip', reason };
    }
    if (selected !== undefined && !selected.includes(name)) {
      const reason = `not selected by ETCDKIT_BACKENDS=${env.ETCDKIT_BACKENDS}`;
      return { name, label, status: 'skip', reason };
    }
    const availability = provider.availability(env);
    if (availability.available) {
      return { name, label, status: 'run', provider, detail: availability.detail };
    }
    if (name === 'etcd' && requireRealEtcd) {
      const reason = `ETCDKIT_REQUIRE_REAL_ETCD=1 but ${availability.reason}`;
      return { name, label, status: 'fail', reason };
    }
    return { name, label, status: 'skip', reason: availability.reason };
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
