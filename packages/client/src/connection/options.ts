// The options a Connection (and the Etcd facade, which accepts the same object) is built from, their
// defaults, and the eager validation that turns a bad configuration into an InvalidConfigError
// before anything is opened.

import type { EtcdError } from '../errors.js';
import { InvalidConfigError } from '../errors.js';
import type { TransportName } from '../transport/select.js';
import type { TlsOptions, Transport } from '../transport/types.js';
import type { OrderingOptions } from './ordering.js';
import type { RetryPolicy } from './types.js';

/** Credentials for etcd's username/password authentication. */
export interface AuthOptions {
  /** etcd user name. */
  readonly username: string;
  /** The user's password. */
  readonly password: string;
}

/** Retry budget of reads (and of writes that provably never left the client). */
export interface RetryOptions {
  /**
   * Attempts per call, the first included. Default 8: with the default delays, the waits add up to
   * 7-9 s, enough to ride through an etcd leader election on a loaded machine. 1 disables retries.
   */
  readonly maxAttempts?: number;
  /** Delay before the first retry, in ms. Doubles per retry. Default 100. */
  readonly minDelayMs?: number;
  /** Largest delay between two attempts, in ms. Default 2000. */
  readonly maxDelayMs?: number;
  /** Multiply each delay by a random factor in [1, 2), so clients do not retry in lockstep. Default true. */
  readonly jitter?: boolean;
}

/** HTTP/2 keepalive pings, to detect dead connections while calls or streams are open. */
export interface KeepaliveOptions {
  /**
   * Interval between pings while calls or streams are active, in ms; 0 disables pings. Default
   * 30_000. etcd closes connections that ping more often than its `--grpc-keepalive-min-time` (5 s).
   */
  readonly intervalMs?: number;
  /** How long to wait for a ping's answer before the connection is considered dead, in ms. Default 10_000. */
  readonly timeoutMs?: number;
}

/** Reported after every unary call (successful or not). */
export interface CallEvent {
  /** gRPC path of the method, e.g. `/etcdserverpb.KV/Range`. */
  readonly method: string;
  /** The retry policy the call ran under. */
  readonly policy: RetryPolicy;
  /** `host:port` of the endpoint of the last attempt, if one was reached. */
  readonly endpoint: string | undefined;
  /** Number of attempts made. */
  readonly attempts: number;
  /** Wall time of the whole call, retries included, in ms. */
  readonly durationMs: number;
  /** The error the call rejected with, if it failed. */
  readonly error?: EtcdError;
}

/** Reported before a failed attempt is retried. */
export interface RetryEvent {
  /** gRPC path of the method. */
  readonly method: string;
  /** The attempt that failed (1 for the first). */
  readonly attempt: number;
  /** Why it failed. */
  readonly error: EtcdError;
  /** `host:port` of the endpoint the attempt used, if any. */
  readonly endpoint: string | undefined;
}

/** Reported when calls move to another endpoint. */
export interface EndpointSwitchEvent {
  /** `host:port` calls went to before, if any. */
  readonly from: string | undefined;
  /** `host:port` calls go to now. */
  readonly to: string;
}

/** Reported when an auth token is obtained. */
export interface AuthRefreshEvent {
  /** Why: the first call, an "invalid auth token" answer, or an explicit `refreshToken()`. */
  readonly reason: 'initial' | 'invalid-token' | 'explicit';
  /** Set when authentication failed. */
  readonly error?: EtcdError;
}

/**
 * The connection's own observability callbacks: calls, retries, endpoint switches, auth refreshes.
 * Each is optional and costs nothing when absent. They run synchronously on the call path: keep
 * them cheap. Exceptions thrown by a hook are ignored. The `Etcd` facade takes these and its
 * services' hooks in one object ({@link ConnectionHooks}).
 */
export interface CallHooks {
  /** After every unary call. */
  readonly onCall?: (event: CallEvent) => void;
  /** Before a failed attempt is retried. */
  readonly onRetry?: (event: RetryEvent) => void;
  /** When calls move to another endpoint. */
  readonly onEndpointSwitch?: (event: EndpointSwitchEvent) => void;
  /** When a token is (re)obtained, or obtaining one failed. */
  readonly onAuthRefresh?: (event: AuthRefreshEvent) => void;
}

/** How a client connects to etcd. The `Etcd` facade accepts the same options. */
export interface ConnectionOptions {
  /**
   * etcd client URLs: `http://host:port` or `https://host:port`; a bare `host:port` means http;
   * `unix:///absolute/path` or `unix:relative/path` for a unix socket (plaintext, like http;
   * `unix://name:port`, the form etcd 3.4 listens on, is the relative path `name:port`). All
   * endpoints must use the same scheme (unix counts as http). Required, non-empty.
   */
  readonly endpoints: readonly string[];
  /** How long to wait for a connection to one endpoint, in ms, before trying the next. Default 5000. */
  readonly dialTimeoutMs?: number;
  /**
   * Default deadline of a unary call, retries included, in ms. Default 30_000; 0 disables it. A
   * call's own `timeoutMs` overrides it. Streams have no default deadline.
   */
  readonly callTimeoutMs?: number;
  /**
   * TLS for `https` endpoints: CA to trust (system roots when absent), and `cert` + `key` for mutual
   * TLS. Must not be set with `http` endpoints.
   */
  readonly tls?: TlsOptions;
  /** Username and password; the client obtains and refreshes the token itself. */
  readonly auth?: AuthOptions;
  /**
   * Send `hasleader: true` with every call and stream, so a member cut off from the leader answers
   * Unavailable ("etcdserver: no leader") instead of hanging. Default false.
   */
  readonly requireLeader?: boolean;
  /** Retry budget; see docs/guarantees.md for what is retried. */
  readonly retry?: RetryOptions;
  /**
   * How channels are opened: `'h2'` (default, {@link H2Transport}: gRPC over HTTP/2 spoken by the
   * client itself, the least client CPU per call; see docs/guarantees.md#transports), `'http2'`
   * ({@link Http2Transport}, gRPC framed over node:http2), `'grpc-js'` ({@link GrpcJsTransport},
   * over @grpc/grpc-js), or any {@link Transport} instance.
   */
  readonly transport?: Transport | TransportName;
  /** HTTP/2 keepalive pings. */
  readonly keepalive?: KeepaliveOptions;
  /** Largest response accepted, in bytes. Default 2^31 - 1 (no practical limit, like etcd's Go client). */
  readonly maxCallRecvMsgSize?: number;
  /** Largest request sent, in bytes. Default 2 MiB (etcd's default max request is 1.5 MiB). */
  readonly maxCallSendMsgSize?: number;
  /** Observability callbacks of the connection. */
  readonly hooks?: CallHooks;
  /**
   * The read-ordering guard, as etcd's Go client/v3/ordering: the client remembers the highest
   * revision any response header (of a call or a stream: watch events too) showed it, and a serializable read (a `serializable` range, get
   * or count; a txn of serializable ranges only) answered at a lower revision, by a member that
   * lags behind, is refused and sent to another endpoint, at most `maxSwitches` times, then fails
   * with OrderViolationError. So reads never go back in time across an endpoint switch.
   * Linearizable reads and writes are not checked (they cannot go back). Default false: a
   * serializable read returns whatever the member it reached has.
   */
  readonly ordering?: boolean | OrderingOptions;
}

/** One validated endpoint. */
export interface EndpointAddress {
  /**
   * The URL as normalised: `http://host:port`, `https://host:port`, or for a unix socket
   * `unix:///absolute/path` or `unix:relative/path`.
   */
  readonly url: string;
  /**
   * The gRPC target: `host:port` (IPv6 hosts keep their brackets), or for a unix socket the URL
   * (both forms are targets grpc-js and the http2 transport understand).
   */
  readonly target: string;
  /** True for https. */
  readonly secure: boolean;
}

/** Defaults of every optional setting. */
export const CONNECTION_DEFAULTS = {
  dialTimeoutMs: 5_000,
  callTimeoutMs: 30_000,
  maxAttempts: 8,
  minDelayMs: 100,
  maxDelayMs: 2_000,
  jitter: true,
  keepaliveIntervalMs: 30_000,
  keepaliveTimeoutMs: 10_000,
  maxCallRecvMsgSize: 2 ** 31 - 1,
  maxCallSendMsgSize: 2 * 1024 * 1024,
} as const;

const ENDPOINT =
  /^(?:([a-zA-Z][a-zA-Z0-9+.-]*):\/\/)?(\[[0-9a-fA-F:.]+\]|[^/:?#@[\]\s]+)(?::(\d*))?\/?$/;

/** Parses one endpoint URL; throws InvalidConfigError with the reason. */
export function parseEndpoint(raw: string): EndpointAddress {
  if (typeof raw !== 'string' || raw.trim() === '') {
    throw new InvalidConfigError(`invalid endpoint ${JSON.stringify(raw)}: empty`);
  }
  const text = raw.trim();
  if (/^unixs?:/i.test(text)) return parseUnixEndpoint(text);
  const match = ENDPOINT.exec(text);
  if (!match) {
    throw new InvalidConfigError(
      `invalid endpoint "${text}": expected http://host:port, https://host:port or host:port`,
    );
  }
  const [, scheme = 'http', host = '', port] = match;
  const lower = scheme.toLowerCase();
  if (lower !== 'http' && lower !== 'https') {
    throw new InvalidConfigError(
      `invalid endpoint "${text}": unsupported scheme "${scheme}" (use http or https)`,
    );
  }
  if (port === undefined || port === '') {
    throw new InvalidConfigError(`invalid endpoint "${text}": missing port`);
  }
  const portNumber = Number(port);
  if (!Number.isInteger(portNumber) || portNumber < 1 || portNumber > 65535) {
    throw new InvalidConfigError(`invalid endpoint "${text}": port ${port} is out of range`);
  }
  try {
    new URL(`${lower}://${host}:${portNumber}`);
  } catch (error) {
    throw new InvalidConfigError(`invalid endpoint "${text}": bad host "${host}"`, {
      cause: error,
    });
  }
  const target = `${host}:${portNumber}`;
  return { url: `${lower}://${target}`, target, secure: lower === 'https' };
}

/**
 * A unix socket endpoint, in the forms etcd's Go client dials: `unix:///abs/path` (or `unix:/abs`),
 * `unix:rel/path`, and `unix://name:port/...`, a path relative to the working directory (etcd 3.4
 * listens on and advertises `unix://localhost:2379`, a socket file named `localhost:2379`).
 */
function parseUnixEndpoint(text: string): EndpointAddress {
  const colon = text.indexOf(':');
  const scheme = text.slice(0, colon).toLowerCase();
  if (scheme === 'unixs') {
    throw new InvalidConfigError(
      `invalid endpoint "${text}": unixs (TLS over a unix socket) is not supported; use unix`,
    );
  }
  const rest = text.slice(colon + 1);
  // `unix:///abs` keeps the path's slash; `unix://name/x` (no third slash) is relative, as in Go.
  const path = rest.startsWith('//') ? rest.slice(2) : rest;
  if (path === '' || path === '/') {
    throw new InvalidConfigError(`invalid endpoint "${text}": no socket path`);
  }
  if (/[?#\0]/.test(path)) {
    throw new InvalidConfigError(
      `invalid endpoint "${text}": a socket path cannot hold ?, # or NUL characters`,
    );
  }
  const url = path.startsWith('/') ? `unix://${path}` : `unix:${path}`;
  return { url, target: url, secure: false };
}

/**
 * Parses a non-empty list of endpoint URLs sharing one scheme; throws InvalidConfigError with the
 * reason. Used for the options and for `Connection.setEndpoints`.
 */
export function parseEndpointList(list: readonly string[]): readonly EndpointAddress[] {
  if (!Array.isArray(list) || list.length === 0) {
    throw new InvalidConfigError('endpoints must be a non-empty array of URLs');
  }
  const endpoints = list.map(parseEndpoint);
  const schemes = new Set(endpoints.map((e) => e.secure));
  if (schemes.size > 1) {
    throw new InvalidConfigError('endpoints mix http and https; use one scheme for all of them');
  }
  return endpoints;
}

function checkDuration(name: string, value: number | undefined, allowZero: boolean): void {
  if (value === undefined) return;
  if (
    typeof value !== 'number' ||
    Number.isNaN(value) ||
    value < 0 ||
    (!allowZero && value === 0)
  ) {
    throw new InvalidConfigError(
      `${name} must be a ${allowZero ? 'non-negative' : 'positive'} number of ms, got ${String(value)}`,
    );
  }
}

/** The settings a Connection runs with: options validated and defaults applied. */
export interface ResolvedOptions {
  readonly endpoints: readonly EndpointAddress[];
  readonly secure: boolean;
  readonly dialTimeoutMs: number;
  /** Default unary deadline in ms; Infinity when disabled. */
  readonly callTimeoutMs: number;
  readonly tls: TlsOptions | undefined;
  readonly auth: AuthOptions | undefined;
  readonly requireLeader: boolean;
  readonly maxAttempts: number;
  readonly minDelayMs: number;
  readonly maxDelayMs: number;
  readonly jitter: boolean;
  readonly keepaliveIntervalMs: number;
  readonly keepaliveTimeoutMs: number;
  readonly maxCallRecvMsgSize: number;
  readonly maxCallSendMsgSize: number;
  readonly hooks: CallHooks | undefined;
}

/** Validates `options` and fills in defaults. Throws InvalidConfigError; opens nothing. */
export function resolveOptions(options: ConnectionOptions): ResolvedOptions {
  if (options === null || typeof options !== 'object') {
    throw new InvalidConfigError('options are required: { endpoints: [...] }');
  }
  const endpoints = parseEndpointList(options.endpoints);
  const secure = endpoints[0]!.secure;
  const tls = options.tls;
  if (tls !== undefined) {
    if (!secure) {
      throw new InvalidConfigError('tls is set but the endpoints use http; use https:// URLs');
    }
    if ((tls.cert === undefined) !== (tls.key === undefined)) {
      throw new InvalidConfigError(
        'tls.cert and tls.key go together: give both for mutual TLS, or neither',
      );
    }
  }
  const auth = options.auth;
  if (auth !== undefined) {
    if (typeof auth.username !== 'string' || auth.username === '') {
      throw new InvalidConfigError('auth.username must be a non-empty string');
    }
    if (typeof auth.password !== 'string') {
      throw new InvalidConfigError('auth.password must be a string');
    }
  }
  checkDuration('dialTimeoutMs', options.dialTimeoutMs, false);
  checkDuration('callTimeoutMs', options.callTimeoutMs, true);
  checkDuration('retry.minDelayMs', options.retry?.minDelayMs, true);
  checkDuration('retry.maxDelayMs', options.retry?.maxDelayMs, true);
  checkDuration('keepalive.intervalMs', options.keepalive?.intervalMs, true);
  checkDuration('keepalive.timeoutMs', options.keepalive?.timeoutMs, false);
  const maxAttempts = options.retry?.maxAttempts ?? CONNECTION_DEFAULTS.maxAttempts;
  if (!Number.isInteger(maxAttempts) || maxAttempts < 1) {
    throw new InvalidConfigError(
      `retry.maxAttempts must be an integer >= 1, got ${String(maxAttempts)}`,
    );
  }
  for (const name of ['maxCallRecvMsgSize', 'maxCallSendMsgSize'] as const) {
    const value = options[name];
    if (value !== undefined && (!Number.isInteger(value) || value <= 0)) {
      throw new InvalidConfigError(`${name} must be a positive integer, got ${String(value)}`);
    }
  }
  const callTimeoutMs = options.callTimeoutMs ?? CONNECTION_DEFAULTS.callTimeoutMs;
  return {
    endpoints,
    secure,
    dialTimeoutMs: options.dialTimeoutMs ?? CONNECTION_DEFAULTS.dialTimeoutMs,
    callTimeoutMs: callTimeoutMs === 0 ? Number.POSITIVE_INFINITY : callTimeoutMs,
    tls: secure ? (tls ?? {}) : undefined,
    auth,
    requireLeader: options.requireLeader ?? false,
    maxAttempts,
    minDelayMs: options.retry?.minDelayMs ?? CONNECTION_DEFAULTS.minDelayMs,
    maxDelayMs: options.retry?.maxDelayMs ?? CONNECTION_DEFAULTS.maxDelayMs,
    jitter: options.retry?.jitter ?? CONNECTION_DEFAULTS.jitter,
    keepaliveIntervalMs: options.keepalive?.intervalMs ?? CONNECTION_DEFAULTS.keepaliveIntervalMs,
    keepaliveTimeoutMs: options.keepalive?.timeoutMs ?? CONNECTION_DEFAULTS.keepaliveTimeoutMs,
    maxCallRecvMsgSize: options.maxCallRecvMsgSize ?? CONNECTION_DEFAULTS.maxCallRecvMsgSize,
    maxCallSendMsgSize: options.maxCallSendMsgSize ?? CONNECTION_DEFAULTS.maxCallSendMsgSize,
    hooks: options.hooks,
  };
}
