// A fresh server per conformance test, of the kind the suite runs against (describeEachBackend
// gives the kind), so that every expectation can be written with the absolute revisions a new
// store has: revision 1, the first write 2, and so on.
import type { BackendName } from '@etcdkit/testkit';
import { startEtcd } from '@etcdkit/testkit';
import { EmbeddedEtcd } from '../../src/index.js';
import { RawClient } from '../support/grpc-client.js';
import type { TestServer } from '../support/test-server.js';

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
}

/** The kinds of server the conformance suites compare. */
export const CONFORMANCE_BACKENDS: readonly BackendName[] = ['embedded', 'etcd'];

/** Starts a fresh server of the kind `backend` names, with a raw gRPC client. */
export async function startFreshServer(
  backend: BackendName,
  limits: ServerLimits = {},
): Promise<TestServer> {
  if (backend === 'etcd') return startFreshEtcd(limits);
  if (backend === 'embedded') return startFreshEmbedded(limits);
  throw new Error(`the conformance suites start only embedded and etcd servers, not ${backend}`);
}

async function startFreshEmbedded(limits: ServerLimits): Promise<TestServer> {
  const server = await EmbeddedEtcd.start({ ...limits, minLeaseTtl: limits.minLeaseTtl ?? 1 });
  const client = new RawClient(server.endpoint);
  return {
    backend: 'embedded',
    version: server.version,
    endpoint: server.endpoint,
    client,
    embedded: server,
    async stop() {
      client.close();
      await server.stop();
    },
  };
}

async function startFreshEtcd(limits: ServerLimits): Promise<TestServer> {
  const etcd = await startEtcd({ args: etcdFlags(limits) });
  const client = new RawClient(etcd.endpoint);
  return {
    backend: 'etcd',
    version: etcd.version,
    endpoint: etcd.endpoint,
    client,
    embedded: undefined,
    async stop() {
      client.close();
      await etcd.stop();
    },
  };
}

/** etcd's flags for `limits`. */
export function etcdFlags(limits: ServerLimits): string[] {
  const args: string[] = [];
  if (limits.maxTxnOps !== undefined) args.push('--max-txn-ops', String(limits.maxTxnOps));
  if (limits.maxRequestBytes !== undefined) {
    args.push('--max-request-bytes', String(limits.maxRequestBytes));
  }
  if (limits.quotaBackendBytes !== undefined) {
    args.push('--quota-backend-bytes', String(limits.quotaBackendBytes));
  }
  if (limits.watchProgressNotifyIntervalMs !== undefined) {
    const interval = `${limits.watchProgressNotifyIntervalMs}ms`;
    args.push('--experimental-watch-progress-notify-interval', interval);
  }
  // etcd's defaults: heartbeat 100 ms, election timeout 1 s, so a minimum TTL of 2 s.
  if (limits.minLeaseTtl === 2)
    args.push('--heartbeat-interval', '100', '--election-timeout', '1000');
  return args;
}

/** True when `version` is at least major.minor.patch. */
export function atLeast(version: string, major: number, minor: number, patch = 0): boolean {
  const [a = 0, b = 0, c = 0] = version.split('.').map((part) => Number.parseInt(part, 10));
  return a !== major ? a > major : b !== minor ? b > minor : c >= patch;
}
