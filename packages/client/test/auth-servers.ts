// Servers for the auth suites, which turn auth on and so need a server of their own: a real etcd or
// the embedded server, started with the same token settings (`--auth-token-ttl` or
// `authTokenTtlSeconds`). Suites declare themselves once per backend with describeEachBackend and
// start one of these in beforeAll.
import { EmbeddedEtcd } from '@etcdkit/server-embedded';
import { type BackendName, startEtcd } from '@etcdkit/testkit';
import { Connection } from '../src/connection/connection.js';
import { etcdserverpb_Auth } from '../src/generated/methods.js';

/** The backends the auth suites run on. */
export const AUTH_BACKENDS: readonly BackendName[] = ['embedded', 'etcd'];

/** A server started for one auth suite. */
export interface AuthServer {
  readonly endpoint: string;
  readonly endpoints: readonly string[];
  /** e.g. `3.4.23` for etcd, `3.7.0` for the embedded server. */
  readonly version: string;
  stop(): Promise<void>;
}

/** Token settings both kinds of server take. */
export interface AuthServerOptions {
  /** Seconds an unused simple token lives; default etcd's 300. */
  readonly tokenTtlSeconds?: number;
}

/** Starts a fresh server of kind `backend` with `options`. */
export async function startAuthServer(
  backend: BackendName,
  options: AuthServerOptions = {},
): Promise<AuthServer> {
  const ttl = options.tokenTtlSeconds;
  if (backend === 'embedded') {
    const server = await EmbeddedEtcd.start(ttl === undefined ? {} : { authTokenTtlSeconds: ttl });
    return {
      endpoint: server.endpoint,
      endpoints: server.endpoints,
      version: server.version,
      stop: () => server.stop(),
    };
  }
  if (backend !== 'etcd') throw new Error(`the auth suites start no ${backend} server`);
  const etcd = await startEtcd({
    args: ttl === undefined ? [] : ['--auth-token=simple', `--auth-token-ttl=${ttl}`],
  });
  return {
    endpoint: etcd.endpoint,
    endpoints: etcd.endpoints,
    version: etcd.version,
    stop: () => etcd.stop(),
  };
}

/** The password {@link enableAuth} gives root. */
export const ROOT_PASSWORD = 'root-secret';

/** Creates root (with the root role) and a role-less user `nobody`, then turns auth on. */
export async function enableAuth(endpoint: string): Promise<void> {
  const admin = new Connection({ endpoints: [endpoint] });
  try {
    const A = etcdserverpb_Auth;
    await admin.unary(A.UserAdd, { name: 'root', password: ROOT_PASSWORD }, 'write');
    await admin.unary(A.RoleAdd, { name: 'root' }, 'write');
    await admin.unary(A.UserGrantRole, { user: 'root', role: 'root' }, 'write');
    await admin.unary(A.UserAdd, { name: 'nobody', password: 'nobody-secret' }, 'write');
    await admin.unary(A.AuthEnable, {}, 'write');
  } finally {
    await admin.close();
  }
}
