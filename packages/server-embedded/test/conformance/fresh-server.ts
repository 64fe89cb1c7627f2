// A fresh server per conformance test, of the kind the suite runs against (describeEachBackend
// gives the kind), so that every expectation can be written with the absolute revisions a new
// store has: revision 1, the first write 2, and so on.
import type { BackendName } from '@etcdkit/testkit';
import type { EtcdVersion } from '../../src/etcd-version.js';
import { startServer, type TestServer } from '../support/test-server.js';

export { atLeast } from '../support/test-server.js';

/** Limits both kinds of server take: options of the embedded server, flags of etcd. */
export interface ServerLimits {
  /** `--max-txn-ops`; default 128. */
  readonly maxTxnOps?: number;
  /** `--max-request-bytes`; default 1.5 MiB. */
  readonly maxRequestBytes?: number;
  /** `--quota-backend-bytes`; default 2 GiB. */
  readonly quotaBackendBytes?: number;
  /** `--experimental-watch-progress-notify-interval`, in ms; default 10 min. */
  readonly watchProgressNotifyIntervalMs?: number;
  /**
   * etcd's shortest lease TTL, in seconds: ceil(1.5 x election timeout). Default 1, what etcd
   * computes from the testkit's fast raft timing (100 ms election timeout), so both kinds of
   * server agree. 2 starts etcd with its default timing (1 s), which takes about a second longer.
   */
  readonly minLeaseTtl?: 1 | 2;
  /** The etcd version the embedded server answers as (a real etcd is the version it is). */
  readonly etcdVersion?: EtcdVersion | undefined;
}

/** The kinds of server the conformance suites compare. */
export const CONFORMANCE_BACKENDS: readonly BackendName[] = ['embedded', 'etcd'];

/** Starts a fresh server of the kind `backend` names, with a raw client. */
export function startFreshServer(
  backend: BackendName,
  limits: ServerLimits = {},
): Promise<TestServer> {
  if (backend !== 'etcd' && backend !== 'embedded') {
    throw new Error(`the conformance suites start only embedded and etcd servers, not ${backend}`);
  }
  const { etcdVersion, ...rest } = limits;
  return startServer(backend, {
    ...rest,
    minLeaseTtl: limits.minLeaseTtl ?? 1,
    ...(backend === 'embedded' && etcdVersion !== undefined ? { etcdVersion } : {}),
  });
}
