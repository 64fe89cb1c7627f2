import type { TestkitEnv } from '../etcd-binary.js';

/** The kinds of server the shared suites run against. */
export type BackendName = 'etcd' | 'embedded' | 'external' | 'container';

/** Every backend, in the order suites run them. */
export const BACKEND_NAMES: readonly BackendName[] = ['embedded', 'etcd', 'external', 'container'];

/** What a backend's server can do, for tests that depend on it. */
export interface BackendFeatures {
  /** The server implements `RangeStream` (etcd 3.7+). */
  readonly rangeStream: boolean;
}

/** A started server that tests talk to. */
export interface TestBackend {
  readonly name: BackendName;
  /** Client URLs. */
  readonly endpoints: string[];
  /** Server version, e.g. `3.4.23`; `unknown` when it could not be read. */
  readonly version: string;
  readonly features: BackendFeatures;
  /** Stops what the testkit started; leaves external servers alone. */
  stop(): Promise<void>;
}

/** Whether a backend can run here; `detail` or `reason` are for the human reading the log. */
export type BackendAvailability =
  | { readonly available: true; readonly detail: string }
  | { readonly available: false; readonly reason: string };

/** Knows whether one kind of backend can run, and starts it. */
export interface BackendProvider {
  readonly name: BackendName;
  /**
   * The backend's name in suite titles when it is not {@link name}: a real etcd of one of the
   * versions `ETCDKIT_ETCD_BINS` lists, e.g. `etcd 3.5.30`.
   */
  readonly label?: string;
  /** The etcd binary this provider runs, when it is bound to one (`ETCDKIT_ETCD_BINS`). */
  readonly etcdBinary?: string;
  /** How long {@link start} may take, in ms (a container may pull an image). */
  readonly startTimeoutMs: number;
  /** Synchronous, cheap and side-effect free: suites call it while collecting tests. */
  availability(env: TestkitEnv): BackendAvailability;
  start(env: TestkitEnv): Promise<TestBackend>;
}
