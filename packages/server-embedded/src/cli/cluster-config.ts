// What --simulated-members serves: an EmbeddedCluster built from the same etcd flags as one server.
// The flags that shape the data and the client port of a whole cluster apply to every member; the
// flags of one member's identity or disk cannot, and are refused rather than applied to one
// member or silently dropped.
import type { EmbeddedClusterOptions } from '../cluster/embedded-cluster.js';
import type { EmbeddedEtcdOptions } from '../embedded-etcd.js';
import { type ClientUrl, ClientUrlError, parseListenUrl } from '../net/client-urls.js';
import { ConfigError } from './config-error.js';
import { environmentName, type ParsedFlags } from './flags.js';

const MAX_MEMBERS = 9;
const MAX_PORT = 65_535;
/** etcd's request timeout is this plus two election timeouts (etcd's ServerConfig.ReqTimeout). */
const REQUEST_TIMEOUT_BASE_MS = 5_000;

/** Flags a simulated cluster cannot honour, and why. */
const REFUSED_FLAGS: readonly (readonly [string, string])[] = [
  ['name', 'the members are named member0, member1...'],
  ['advertise-client-urls', 'each member advertises its own client URL'],
  ['data-dir', 'the simulated cluster keeps its state in memory only'],
  ['snapshot-count', 'the simulated cluster keeps its state in memory only'],
];

/**
 * The cluster options for `--simulated-members`, from the flags and the single-server options
 * they gave (validated already).
 */
export function simulatedClusterOf(
  flags: ParsedFlags,
  options: EmbeddedEtcdOptions,
): EmbeddedClusterOptions {
  const members = Number(flags.values.get('simulated-members'));
  if (members > MAX_MEMBERS) {
    throw new ConfigError(
      `--simulated-members ${members} is too many: a simulated cluster has 1 to ${MAX_MEMBERS} members`,
    );
  }
  for (const [name, reason] of REFUSED_FLAGS) {
    const raw = flags.values.get(name);
    if (raw === undefined || raw === '') continue;
    const source = flags.fromEnvironment.has(name)
      ? `${environmentName(name)} (--${name})`
      : `--${name}`;
    throw new ConfigError(`${source} cannot be used with --simulated-members: ${reason}`);
  }
  const url = firstMemberUrl(options);
  const ports = memberPorts(url, members);
  const electionMs = flags.values.get('election-timeout');
  const heartbeatMs = flags.values.get('heartbeat-interval');
  return {
    members,
    ...(ports === undefined ? {} : { ports }),
    ...(electionMs === undefined && heartbeatMs === undefined
      ? {}
      : {
          requestTimeoutMs: requestTimeoutMs(
            Number(heartbeatMs ?? 100),
            Number(electionMs ?? 1000),
          ),
        }),
    ...pick(options),
  };
}

/** The one listen URL, the first member's: a port of 127.0.0.1, with the scheme TLS implies. */
function firstMemberUrl(options: EmbeddedEtcdOptions): ClientUrl {
  const urls = options.listenClientUrls ?? [];
  if (urls.length !== 1) {
    throw new ConfigError(
      `--simulated-members takes one --listen-client-urls URL, the first member's (the others take the next ports), not ${urls.length}`,
    );
  }
  const text = urls[0]!;
  let url: ClientUrl;
  try {
    url = parseListenUrl(text);
  } catch (error) {
    if (error instanceof ClientUrlError) throw new ConfigError(error.message, { cause: error });
    throw error;
  }
  if (url.host !== '127.0.0.1' && url.host !== 'localhost') {
    throw new ConfigError(
      `the simulated members listen on 127.0.0.1 only: --listen-client-urls ${text} must be on 127.0.0.1 or localhost`,
    );
  }
  if (url.scheme === 'https' && options.tls === undefined) {
    throw new ConfigError(
      `TLS key/cert must be provided for client url ${text} with HTTPS scheme: give --cert-file and --key-file`,
    );
  }
  if (url.scheme === 'http' && options.tls !== undefined) {
    throw new ConfigError(
      `with --cert-file and --key-file the simulated members serve https: give an https --listen-client-urls, not ${text}`,
    );
  }
  return url;
}

/** Consecutive ports from the URL's; none (free ports) for port 0. */
function memberPorts(url: ClientUrl, members: number): number[] | undefined {
  if (url.port === 0) return undefined;
  const last = url.port + members - 1;
  if (last > MAX_PORT) {
    throw new ConfigError(
      `--simulated-members ${members} from port ${url.port} needs ports up to ${last}, above ${MAX_PORT}`,
    );
  }
  return Array.from({ length: members }, (_, i) => url.port + i);
}

/**
 * etcd's request timeout from its raft timing: 5 s and two election timeouts counted in whole
 * heartbeats. It is how long a member without a leader holds a call before failing it.
 */
export function requestTimeoutMs(heartbeatMs: number, electionMs: number): number {
  return REQUEST_TIMEOUT_BASE_MS + 2 * Math.floor(electionMs / heartbeatMs) * heartbeatMs;
}

/** The single-server options that apply to every member alike. */
function pick(options: EmbeddedEtcdOptions): EmbeddedClusterOptions {
  const shared: { -readonly [K in keyof EmbeddedClusterOptions]: EmbeddedClusterOptions[K] } = {};
  if (options.tls !== undefined) shared.tls = options.tls;
  if (options.etcdVersion !== undefined) shared.etcdVersion = options.etcdVersion;
  if (options.authTokenTtlSeconds !== undefined)
    shared.authTokenTtlSeconds = options.authTokenTtlSeconds;
  if (options.maxTxnOps !== undefined) shared.maxTxnOps = options.maxTxnOps;
  if (options.maxRequestBytes !== undefined) shared.maxRequestBytes = options.maxRequestBytes;
  if (options.quotaBackendBytes !== undefined) shared.quotaBackendBytes = options.quotaBackendBytes;
  if (options.autoCompaction !== undefined) shared.autoCompaction = options.autoCompaction;
  if (options.minLeaseTtl !== undefined) shared.minLeaseTtl = options.minLeaseTtl;
  if (options.watchProgressNotifyIntervalMs !== undefined)
    shared.watchProgressNotifyIntervalMs = options.watchProgressNotifyIntervalMs;
  return shared;
}
