// A fresh server per test. By default the embedded one; with ETCDKIT_SERVER_SPEC_BACKEND=etcd the
// same tests run against a real etcd (a fresh process each time, through the testkit), which is
// how the expectations here were checked.
import { startEtcd } from '@etcdkit/testkit';
import { parseEtcdVersion } from '../../src/etcd-version.js';
import { EmbeddedEtcd, type EmbeddedEtcdOptions, type EtcdVersion } from '../../src/index.js';
import { RawClient } from './grpc-client.js';

/** A started server and a raw client connected to it. */
export interface TestServer {
  /** `embedded` or `etcd`. */
  readonly backend: 'embedded' | 'etcd';
  /** The server's etcd version, e.g. `3.7.0` (embedded) or `3.4.23`. */
  readonly version: string;
  readonly endpoint: string;
  readonly client: RawClient;
  /** The embedded server itself, when that is the backend. */
  readonly embedded: EmbeddedEtcd | undefined;
  stop(): Promise<void>;
}

/** Which backend these tests run against. */
export const specBackend: 'embedded' | 'etcd' =
  process.env.ETCDKIT_SERVER_SPEC_BACKEND === 'etcd' ? 'etcd' : 'embedded';

/** Limits that both backends take (as options or as etcd flags). */
export type TestServerOptions = Pick<
  EmbeddedEtcdOptions,
  | 'maxTxnOps'
  | 'maxRequestBytes'
  | 'watchProgressNotifyIntervalMs'
  | 'quotaBackendBytes'
  | 'minLeaseTtl'
  // The embedded server's only: a real etcd is the version it is.
  | 'etcdVersion'
>;

/** A fresh server of the spec backend (ETCDKIT_SERVER_SPEC_BACKEND), embedded by default. */
export function startTestServer(options: TestServerOptions = {}): Promise<TestServer> {
  return startServer(specBackend, options);
}

/** A fresh server of the given kind with a raw client; etcd gets `options` as its flags. */
export async function startServer(
  backend: 'embedded' | 'etcd',
  options: TestServerOptions = {},
): Promise<TestServer> {
  if (backend === 'etcd') {
    const etcd = await startEtcd({ args: etcdFlags(options) });
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
  const server = await EmbeddedEtcd.start({ etcdVersion: embeddedEtcdVersion(), ...options });
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

/**
 * The version the embedded server answers as unless a test picks one: `ETCDKIT_EMBEDDED_ETCD_VERSION`
 * (as the testkit's embedded backend reads it), else the server's default.
 */
export function embeddedEtcdVersion(): EtcdVersion | undefined {
  const given = process.env.ETCDKIT_EMBEDDED_ETCD_VERSION?.trim();
  return given === undefined || given === '' ? undefined : parseEtcdVersion(given);
}

/** etcd's flags for the options both backends take. */
export function etcdFlags(options: TestServerOptions): string[] {
  const args: string[] = [];
  if (options.maxTxnOps !== undefined) args.push('--max-txn-ops', String(options.maxTxnOps));
  if (options.maxRequestBytes !== undefined) {
    args.push('--max-request-bytes', String(options.maxRequestBytes));
  }
  if (options.watchProgressNotifyIntervalMs !== undefined) {
    const interval = `${options.watchProgressNotifyIntervalMs}ms`;
    args.push('--experimental-watch-progress-notify-interval', interval);
  }
  if (options.quotaBackendBytes !== undefined) {
    args.push('--quota-backend-bytes', String(options.quotaBackendBytes));
  }
  // etcd's minimum TTL is ceil(1.5 x election timeout). The testkit's fast timing (100 ms election
  // timeout) already makes it 1 s; 2 s is etcd's default timing (heartbeat 100 ms, election 1 s).
  const ttl = options.minLeaseTtl;
  if (ttl === 2) {
    args.push('--heartbeat-interval', '100', '--election-timeout', '1000');
  } else if (ttl !== undefined && ttl !== 1) {
    const electionMs = Math.floor((ttl * 1000) / 1.5);
    args.push('--heartbeat-interval', String(Math.max(1, Math.floor(electionMs / 10))));
    args.push('--election-timeout', String(electionMs));
  }
  return args;
}

/** True when `version` is at least major.minor.patch. */
export function atLeast(version: string, major: number, minor: number, patch = 0): boolean {
  const [a = 0, b = 0, c = 0] = version.split('.').map((part) => Number.parseInt(part, 10));
  return a !== major ? a > major : b !== minor ? b > minor : c >= patch;
}

/** True when the version is at least `major.minor`. */
export function versionAtLeast(version: string, major: number, minor: number): boolean {
  return atLeast(version, major, minor);
}
