// What the auth suites share: a fresh server per test (the embedded one or a real etcd, started
// with the same auth settings), a raw gRPC client whose calls may carry a token, and the users
// most tests start from.
import {
  etcdserverpb_Auth as Auth,
  type etcdserverpb,
  type MethodDescriptor,
  etcdserverpb_Watch as Watch,
} from '@etcdkit/client/protocol';
import { type BackendName, describeEachBackend, startEtcd } from '@etcdkit/testkit';
import * as grpc from '@grpc/grpc-js';
import { afterEach, describe } from 'vitest';
import type { EtcdVersion } from '../../src/etcd-version.js';
import { EmbeddedEtcd, VirtualClock } from '../../src/index.js';
import { b } from '../support/bytes.js';

/** A gRPC status as a test sees it. */
export interface Status {
  readonly code: number;
  readonly details: string;
}

/** gRPC codes the auth suites meet. */
export const Code = {
  UNKNOWN: 2,
  INVALID_ARGUMENT: 3,
  PERMISSION_DENIED: 7,
  FAILED_PRECONDITION: 9,
  UNIMPLEMENTED: 12,
  UNAUTHENTICATED: 16,
} as const;

/** etcd's auth errors, code and exact message. */
export const Errors = {
  userEmpty: { code: Code.INVALID_ARGUMENT, details: 'etcdserver: user name is empty' },
  roleEmpty: { code: Code.INVALID_ARGUMENT, details: 'etcdserver: role name is empty' },
  invalidToken: { code: Code.UNAUTHENTICATED, details: 'etcdserver: invalid auth token' },
  permissionDenied: { code: Code.PERMISSION_DENIED, details: 'etcdserver: permission denied' },
  authFailed: {
    code: Code.INVALID_ARGUMENT,
    details: 'etcdserver: authentication failed, invalid user ID or password',
  },
  notEnabled: {
    code: Code.FAILED_PRECONDITION,
    details: 'etcdserver: authentication is not enabled',
  },
  rootUserMissing: {
    code: Code.FAILED_PRECONDITION,
    details: 'etcdserver: root user does not exist',
  },
  rootRoleMissing: {
    code: Code.FAILED_PRECONDITION,
    details: 'etcdserver: root user does not have root role',
  },
  userExists: { code: Code.FAILED_PRECONDITION, details: 'etcdserver: user name already exists' },
  userNotFound: { code: Code.FAILED_PRECONDITION, details: 'etcdserver: user name not found' },
  roleExists: { code: Code.FAILED_PRECONDITION, details: 'etcdserver: role name already exists' },
  roleNotFound: { code: Code.FAILED_PRECONDITION, details: 'etcdserver: role name not found' },
  roleNotGranted: {
    code: Code.FAILED_PRECONDITION,
    details: 'etcdserver: role is not granted to the user',
  },
  permissionNotGranted: {
    code: Code.FAILED_PRECONDITION,
    details: 'etcdserver: permission is not granted to the role',
  },
  invalidManagement: {
    code: Code.INVALID_ARGUMENT,
    details: 'etcdserver: invalid auth management',
  },
  noPasswordUser: {
    code: Code.UNKNOWN,
    details: 'auth: authentication failed, password was given for no password user',
  },
} satisfies Record<string, Status>;

/** The permission types of authpb. */
export const READ = 0;
export const WRITE = 1;
export const READWRITE = 2;

/** A raw client: every call may carry a token (or any metadata), nothing is retried. */
export class AuthClient {
  private readonly client: grpc.Client;

  /** `tls`: PEM material for an `https` endpoint (the client certificate makes it mutual). */
  constructor(endpoint: string, tls?: { ca: string; cert?: string; key?: string }) {
    const credentials =
      tls === undefined
        ? grpc.credentials.createInsecure()
        : grpc.credentials.createSsl(
            Buffer.from(tls.ca),
            tls.key === undefined ? null : Buffer.from(tls.key),
            tls.cert === undefined ? null : Buffer.from(tls.cert),
          );
    this.client = new grpc.Client(endpoint.replace(/^https?:\/\//, ''), credentials);
  }

  unary<Req, Res>(method: MethodDescriptor<Req, Res>, request: Req, token?: Token): Promise<Res> {
    return new Promise((resolve, reject) => {
      this.client.makeUnaryRequest(
        method.path,
        (message: Req) => Buffer.from(method.request.encode(message).finish()),
        (bytes: Buffer) => method.response.decode(bytes),
        request,
        metadataOf(token),
        (error, response) => (error ? reject(error) : resolve(response!)),
      );
    });
  }

  /** Every message of a server stream; rejects with the stream's status. */
  serverStream<Req, Res>(
    method: MethodDescriptor<Req, Res>,
    request: Req,
    token?: Token,
  ): Promise<Res[]> {
    return new Promise((resolve, reject) => {
      const messages: Res[] = [];
      const call = this.client.makeServerStreamRequest(
        method.path,
        (message: Req) => Buffer.from(method.request.encode(message).finish()),
        (bytes: Buffer) => method.response.decode(bytes),
        request,
        metadataOf(token),
      );
      call.on('data', (message: Res) => messages.push(message));
      call.on('error', reject);
      call.on('end', () => resolve(messages));
    });
  }

  /** Opens a bidirectional stream sending `token` as its metadata. */
  bidi<Req, Res>(method: MethodDescriptor<Req, Res>, token?: Token): Tap<Req, Res> {
    const call = this.client.makeBidiStreamRequest(
      method.path,
      (message: Req) => Buffer.from(method.request.encode(message).finish()),
      (bytes: Buffer) => method.response.decode(bytes),
      metadataOf(token),
    );
    return new Tap(call);
  }

  /** A Watch stream opened with `token`. */
  watch(token?: Token): Tap<etcdserverpb.WatchRequest.$Properties, etcdserverpb.WatchResponse> {
    return this.bidi(Watch.Watch, token);
  }

  /** Authenticates and returns the token. */
  async token(name: string, password: string): Promise<string> {
    return (await this.unary(Auth.Authenticate, { name, password })).token;
  }

  close(): void {
    this.client.close();
  }
}

/** A token, or the whole metadata to send. */
export type Token = string | Readonly<Record<string, string>>;

function metadataOf(token: Token | undefined): grpc.Metadata {
  const metadata = new grpc.Metadata();
  if (typeof token === 'string') metadata.set('token', token);
  else if (token !== undefined)
    for (const [key, value] of Object.entries(token)) {
      metadata.set(key, value);
    }
  return metadata;
}

/** A bidirectional stream whose responses are collected as they come. */
export class Tap<Req, Res> {
  readonly responses: Res[] = [];
  /** The status the stream ended with, once it did. */
  ended: Status | undefined;
  private readonly call: grpc.ClientDuplexStream<Req, Res>;
  private waiters: (() => void)[] = [];

  constructor(call: grpc.ClientDuplexStream<Req, Res>) {
    this.call = call;
    call.on('data', (message: Res) => {
      this.responses.push(message);
      this.wake();
    });
    call.on('error', (error: grpc.ServiceError) => {
      this.ended = { code: error.code, details: error.details };
      this.wake();
    });
    call.on('end', () => {
      this.ended ??= { code: 0, details: '' };
      this.wake();
    });
  }

  write(request: Req): void {
    this.call.write(request);
  }

  /** Resolves once `count` responses arrived (or the stream ended: then rejects). */
  async take(count: number, timeoutMs = 5_000): Promise<Res[]> {
    const deadline = Date.now() + timeoutMs;
    while (this.responses.length < count) {
      if (this.ended !== undefined) {
        throw new Error(
          `stream ended with ${JSON.stringify(this.ended)} after ${this.responses.length} responses`,
        );
      }
      if (Date.now() > deadline) throw new Error(`only ${this.responses.length} responses`);
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 50);
      });
    }
    return this.responses.slice(0, count);
  }

  /** Resolves with the status once the stream ended. */
  async end(timeoutMs = 5_000): Promise<Status> {
    const deadline = Date.now() + timeoutMs;
    while (this.ended === undefined) {
      if (Date.now() > deadline) throw new Error('the stream did not end');
      await new Promise<void>((resolve) => {
        this.waiters.push(resolve);
        setTimeout(resolve, 50);
      });
    }
    return this.ended;
  }

  close(): void {
    this.call.cancel();
  }

  private wake(): void {
    const waiters = this.waiters;
    this.waiters = [];
    for (const wake of waiters) wake();
  }
}

/** The status a call failed with (fails the test if it succeeded). */
export async function failure(promise: Promise<unknown>): Promise<Status> {
  const outcome = await promise.then(
    () => undefined,
    (error: grpc.ServiceError) => ({ code: error.code, details: error.details }),
  );
  if (outcome === undefined) throw new Error('the call succeeded');
  return outcome;
}

/** A started server for one test. */
export interface AuthTestServer {
  readonly backend: 'embedded' | 'etcd';
  readonly version: string;
  readonly endpoint: string;
  /** A client without credentials (add a token per call). */
  readonly client: AuthClient;
  /** The embedded server, when that is the backend. */
  readonly embedded: EmbeddedEtcd | undefined;
  stop(): Promise<void>;
}

/** Server settings both kinds take. */
export interface AuthServerOptions {
  /** `--auth-token-ttl` / `authTokenTtlSeconds`. */
  readonly tokenTtlSeconds?: number;
  /** Run the embedded server on a virtual clock (ignored by etcd). */
  readonly virtualClock?: boolean;
  /** `--max-request-bytes` / `maxRequestBytes`. */
  readonly maxRequestBytes?: number;
  /** The etcd version the embedded server answers as (a real etcd is the version it is). */
  readonly etcdVersion?: EtcdVersion | undefined;
}

/** Starts a fresh server of kind `backend`. */
export async function startAuthServer(
  backend: BackendName,
  options: AuthServerOptions = {},
): Promise<AuthTestServer> {
  if (backend === 'embedded') {
    const embedded = await EmbeddedEtcd.start({
      ...(options.tokenTtlSeconds === undefined
        ? {}
        : { authTokenTtlSeconds: options.tokenTtlSeconds }),
      ...(options.virtualClock ? { clock: new VirtualClock() } : {}),
      ...(options.maxRequestBytes === undefined
        ? {}
        : { maxRequestBytes: options.maxRequestBytes }),
      ...(options.etcdVersion === undefined ? {} : { etcdVersion: options.etcdVersion }),
    });
    const client = new AuthClient(embedded.endpoint);
    return {
      backend,
      version: embedded.version,
      endpoint: embedded.endpoint,
      client,
      embedded,
      async stop() {
        client.close();
        await embedded.stop();
      },
    };
  }
  if (backend !== 'etcd') throw new Error(`the auth suites do not run on ${backend}`);
  const args =
    options.tokenTtlSeconds === undefined
      ? []
      : ['--auth-token=simple', `--auth-token-ttl=${options.tokenTtlSeconds}`];
  if (options.maxRequestBytes !== undefined) {
    args.push(`--max-request-bytes=${options.maxRequestBytes}`);
  }
  const etcd = await startEtcd({ args });
  const client = new AuthClient(etcd.endpoint);
  return {
    backend,
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

/** What an auth suite body gets. */
export interface AuthSuiteContext {
  /** `embedded` or `etcd`. */
  readonly backend: BackendName;
  /** A fresh server for the current test, stopped after it. */
  fresh(options?: AuthServerOptions): Promise<AuthTestServer>;
}

/**
 * Declares `body` for the embedded server and for a real etcd, each test on its own server; with
 * `embeddedAs`, for the embedded server answering as each of those versions too.
 */
export function describeAuth(
  title: string,
  body: (context: AuthSuiteContext) => void,
  { embeddedAs = [] }: { readonly embeddedAs?: readonly EtcdVersion[] } = {},
): void {
  describeEachBackend(
    `auth: ${title}`,
    ({ name }) => {
      declareOn(name, undefined, body);
      if (name !== 'embedded') return;
      for (const etcdVersion of embeddedAs) {
        describe(`answering as etcd ${etcdVersion}`, () => declareOn(name, etcdVersion, body));
      }
    },
    { only: ['embedded', 'etcd'] },
  );
}

function declareOn(
  backend: BackendName,
  etcdVersion: EtcdVersion | undefined,
  body: (context: AuthSuiteContext) => void,
): void {
  const started: AuthTestServer[] = [];
  afterEach(async () => {
    await Promise.all(started.splice(0).map((server) => server.stop()));
  });
  body({
    backend,
    async fresh(options) {
      const server = await startAuthServer(backend, { ...options, etcdVersion });
      started.push(server);
      return server;
    },
  });
}

/** True for servers that answer as etcd 3.5+ (the embedded one by default). */
export function isModern(version: string): boolean {
  return !version.startsWith('3.4.');
}

/**
 * True for etcd `version` from the patch releases that `since` names for 3.5 and 3.6 (a change
 * backported to both); 3.4 never, 3.7 always.
 */
export function fromPatch(
  version: string,
  since: { readonly '3.5': number; readonly '3.6': number },
) {
  const [, minor = 0, patch = 0] = version.split('.').map(Number);
  if (minor === 5) return patch >= since['3.5'];
  if (minor === 6) return patch >= since['3.6'];
  return minor > 6;
}

/** The root password the fixtures use. */
export const ROOT_PASSWORD = 'root-secret';

/**
 * Creates root (with the root role), then `users` with their roles' permissions, then enables
 * auth. Returns a token for root and one for each user.
 */
export async function setUpAuth<User extends string = never>(
  client: AuthClient,
  users: Readonly<Record<User, readonly Permission[]>> = {} as Record<User, Permission[]>,
): Promise<Record<'root' | User, string>> {
  await client.unary(Auth.UserAdd, { name: 'root', password: ROOT_PASSWORD });
  await client.unary(Auth.RoleAdd, { name: 'root' });
  await client.unary(Auth.UserGrantRole, { user: 'root', role: 'root' });
  const names = Object.keys(users) as User[];
  for (const name of names) {
    await client.unary(Auth.UserAdd, { name, password: `${name}-secret` });
    await client.unary(Auth.RoleAdd, { name: `${name}-role` });
    for (const permission of users[name]) {
      await client.unary(Auth.RoleGrantPermission, {
        name: `${name}-role`,
        perm: {
          permType: permission.type,
          key: b(permission.key),
          rangeEnd: b(permission.end ?? ''),
        },
      });
    }
    await client.unary(Auth.UserGrantRole, { user: name, role: `${name}-role` });
  }
  await client.unary(Auth.AuthEnable, {});
  const tokens = { root: await client.token('root', ROOT_PASSWORD) } as Record<
    'root' | User,
    string
  >;
  for (const name of names) tokens[name] = await client.token(name, `${name}-secret`);
  return tokens;
}

/** A permission in a fixture: `end` '' (default) one key, '\0' from the key on. */
export interface Permission {
  readonly type: typeof READ | typeof WRITE | typeof READWRITE;
  readonly key: string;
  readonly end?: string;
}
