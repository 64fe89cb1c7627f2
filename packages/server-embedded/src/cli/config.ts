// From etcd's flags to the embedded server's options, with etcd's checks of the values. Problems
// with values that parsed (a certificate file that cannot be read, an unknown compaction mode) are
// ConfigErrors: etcd reports those while starting and exits 1.
import { readFile } from 'node:fs/promises';
import type { EmbeddedClusterOptions } from '../cluster/embedded-cluster.js';
import type { EmbeddedEtcdOptions } from '../embedded-etcd.js';
import { type EtcdVersion, parseEtcdVersion, UnknownEtcdVersionError } from '../etcd-version.js';
import type { LogLevel } from '../logger.js';
import type { AutoCompactionOptions } from '../maintenance/auto-compaction.js';
import type { ServerTlsOptions } from '../net/server-tls.js';
import { simulatedClusterOf } from './cluster-config.js';
import { ConfigError } from './config-error.js';
import { parseGoDuration } from './duration.js';
import { FLAGS, FlagError, type ParsedFlags } from './flags.js';

export { ConfigError } from './config-error.js';

/** What the command line asks for. */
export interface CliConfig {
  /** Options of the server (all but the logger, which the CLI builds). */
  readonly options: EmbeddedEtcdOptions;
  /**
   * With `--simulated-members`: the simulated cluster to serve instead of one server, from the
   * same flags (`options` is then not used).
   */
  readonly cluster?: EmbeddedClusterOptions;
  readonly logLevel: LogLevel;
  readonly logOutput: 'stderr' | 'stdout';
  /** Flags accepted with no effect, and other things the user should know, to log at start. */
  readonly warnings: readonly string[];
}

const DEFAULT_LISTEN_CLIENT_URLS = 'http://localhost:2379';
const LOG_LEVELS: Record<string, LogLevel> = {
  debug: 'debug',
  info: 'info',
  warn: 'warn',
  error: 'error',
  // Go's zap levels above error; the server has nothing to log at them, they only filter more.
  dpanic: 'error',
  panic: 'error',
  fatal: 'error',
};
const MAX_ELECTION_MS = 50_000;

/** Builds the server's options from parsed flags, reading certificate files. */
export async function buildConfig(flags: ParsedFlags): Promise<CliConfig> {
  const value = (name: string): string | undefined => flags.values.get(name);
  const given = (name: string): boolean => flags.values.has(name);
  const warnings: string[] = [];
  const simulated = Number(value('simulated-members') ?? 0) > 0;

  for (const spec of FLAGS) {
    const raw = value(spec.name);
    if (raw === undefined) continue;
    if (spec.support === 'unsupported') {
      throw new FlagError(`--${spec.name} is not supported by etcdkit-server: ${spec.help}`);
    }
    if (spec.support === 'ignored' && raw !== 'false' && raw !== '') {
      warnings.push(
        simulated
          ? `--${spec.name} is accepted and ignored: the simulated members have no peer or metrics listeners`
          : `--${spec.name} is accepted and ignored: the embedded server is a single member`,
      );
    }
  }

  const logLevel = LOG_LEVELS[value('log-level') ?? 'info'];
  if (logLevel === undefined) {
    throw new ConfigError(
      `unknown --log-level ${JSON.stringify(value('log-level'))}: debug, info, warn, error, panic or fatal`,
    );
  }
  const logger = value('logger') ?? 'zap';
  if (logger === 'capnslog') {
    warnings.push('--logger=capnslog is accepted, but logs are written as JSON lines (zap)');
  } else if (logger !== 'zap') {
    throw new ConfigError(`unknown --logger ${JSON.stringify(logger)}: zap or capnslog`);
  }
  const logOutput = logOutputOf(value('log-outputs') ?? 'default');

  const options: {
    -readonly [K in keyof EmbeddedEtcdOptions]: EmbeddedEtcdOptions[K];
  } = {
    name: value('name') ?? 'default',
    listenClientUrls: urlList(value('listen-client-urls') ?? DEFAULT_LISTEN_CLIENT_URLS),
  };
  const advertise = value('advertise-client-urls');
  if (advertise !== undefined) options.advertiseClientUrls = urlList(advertise);
  const tls = await tlsOf(value, warnings);
  if (tls !== undefined) options.tls = tls;
  const dataDir = value('data-dir');
  if (dataDir !== undefined && dataDir !== '') options.dataDir = dataDir;
  if (given('etcd-version')) options.etcdVersion = etcdVersionFlag(value('etcd-version'));
  if (given('snapshot-count')) options.snapshotCount = Number(value('snapshot-count'));
  const authToken = value('auth-token') ?? 'simple';
  if (authToken.split(',')[0] !== 'simple') {
    throw new ConfigError(
      `unsupported --auth-token ${JSON.stringify(authToken)}: only simple tokens are issued`,
    );
  }
  if (given('auth-token-ttl')) options.authTokenTtlSeconds = Number(value('auth-token-ttl'));
  if (given('max-txn-ops')) options.maxTxnOps = Number(value('max-txn-ops'));
  if (given('max-request-bytes')) options.maxRequestBytes = Number(value('max-request-bytes'));
  if (given('quota-backend-bytes'))
    options.quotaBackendBytes = Number(value('quota-backend-bytes'));
  const compaction = autoCompactionOf(
    value('auto-compaction-mode') ?? 'periodic',
    value('auto-compaction-retention') ?? '0',
  );
  if (compaction !== undefined) options.autoCompaction = compaction;
  const progress = value('experimental-watch-progress-notify-interval');
  if (progress !== undefined) options.watchProgressNotifyIntervalMs = parseGoDuration(progress);
  if (given('heartbeat-interval') || given('election-timeout')) {
    options.minLeaseTtl = minLeaseTtl(
      Number(value('heartbeat-interval') ?? 100),
      Number(value('election-timeout') ?? 1000),
    );
  }
  if (simulated) {
    return { options, cluster: simulatedClusterOf(flags, options), logLevel, logOutput, warnings };
  }
  return { options, logLevel, logOutput, warnings };
}

/** The `--etcd-version` flag as a version, or a ConfigError saying which there are. */
export function etcdVersionFlag(text: string | undefined): EtcdVersion {
  try {
    return parseEtcdVersion(text);
  } catch (error) {
    if (!(error instanceof UnknownEtcdVersionError)) throw error;
    throw new ConfigError(`--etcd-version: ${error.message}`);
  }
}

function urlList(text: string): string[] {
  return text
    .split(',')
    .map((url) => url.trim())
    .filter((url) => url !== '');
}

function logOutputOf(text: string): 'stderr' | 'stdout' {
  if (text === 'default' || text === 'stderr') return 'stderr';
  if (text === 'stdout') return 'stdout';
  throw new ConfigError(
    `unsupported --log-outputs ${JSON.stringify(text)}: etcdkit-server logs to stderr (default) or stdout`,
  );
}

async function tlsOf(
  value: (name: string) => string | undefined,
  warnings: string[],
): Promise<ServerTlsOptions | undefined> {
  const certFile = value('cert-file') ?? '';
  const keyFile = value('key-file') ?? '';
  const caFile = value('trusted-ca-file') ?? '';
  const clientCertAuth = value('client-cert-auth') === 'true';
  if (certFile === '' && keyFile === '') {
    if (caFile !== '' || clientCertAuth) {
      warnings.push(
        '--trusted-ca-file and --client-cert-auth take effect only with --cert-file and --key-file',
      );
    }
    return undefined;
  }
  if (certFile === '' || keyFile === '') {
    throw new ConfigError('TLS needs both --cert-file and --key-file');
  }
  // One after another, so that a bad invocation always names the same (first) unreadable file.
  const cert = await readPem(certFile, 'cert-file');
  const key = await readPem(keyFile, 'key-file');
  const ca = caFile === '' ? undefined : await readPem(caFile, 'trusted-ca-file');
  return { cert, key, ...(ca === undefined ? {} : { ca }), clientCertAuth };
}

async function readPem(path: string, flagName: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    const reason = error instanceof Error ? error.message : String(error);
    throw new ConfigError(`cannot read --${flagName} ${path}: ${reason}`, { cause: error });
  }
}

/** etcd's reading of `--auto-compaction-mode` and `--auto-compaction-retention`. */
export function autoCompactionOf(
  mode: string,
  retention: string,
): AutoCompactionOptions | undefined {
  if (mode !== 'periodic' && mode !== 'revision') {
    throw new ConfigError(
      `unsupported --auto-compaction-mode ${JSON.stringify(mode)}: periodic or revision`,
    );
  }
  if (/^\d+$/.test(retention)) {
    const number = Number(retention);
    if (number === 0) return undefined;
    // A bare number is hours in periodic mode and revisions in revision mode.
    return mode === 'revision'
      ? { mode, retention: number }
      : { mode, retentionMs: number * 3_600_000 };
  }
  const ms = parseGoDuration(retention);
  if (ms === undefined || ms < 0) {
    throw new ConfigError(
      `invalid --auto-compaction-retention ${JSON.stringify(retention)}: hours or a duration such as 30m (periodic), revisions (revision)`,
    );
  }
  if (mode === 'revision') {
    // etcd would take the duration's nanoseconds as a revision count; that is never what is meant.
    throw new ConfigError(
      `--auto-compaction-retention ${JSON.stringify(retention)} must be a number of revisions in revision mode`,
    );
  }
  return ms === 0 ? undefined : { mode, retentionMs: ms };
}

/**
 * etcd's minimum lease TTL from its raft timing: 1.5 election timeouts counted in whole
 * heartbeats, rounded up to whole seconds; with etcd's checks of the two values.
 */
export function minLeaseTtl(heartbeatMs: number, electionMs: number): number {
  if (heartbeatMs <= 0 || 5 * heartbeatMs > electionMs) {
    throw new ConfigError(
      `--election-timeout (${electionMs} ms) must be at least 5 times --heartbeat-interval (${heartbeatMs} ms)`,
    );
  }
  if (electionMs > MAX_ELECTION_MS) {
    throw new ConfigError(
      `--election-timeout (${electionMs} ms) is too long: at most ${MAX_ELECTION_MS} ms`,
    );
  }
  const electionTicks = Math.floor(electionMs / heartbeatMs);
  return Math.ceil((Math.floor((3 * electionTicks) / 2) * heartbeatMs) / 1000);
}
