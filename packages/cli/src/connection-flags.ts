// etcdctl's connection flags and their ETCDCTL_* environment variables, turned into the client's
// options. A flag wins over its variable, as in etcdctl.
import { readFileSync } from 'node:fs';
import type { EtcdOptions } from '@etcdkit/client';
import { parseDurationMs } from './duration.js';
import { CliError, usageError } from './errors.js';

/** The connection flags as given (flag or ETCDCTL_* variable), before any file is read. */
export interface ConnectionFlags {
  readonly endpoints?: readonly string[];
  readonly cacert?: string;
  readonly cert?: string;
  readonly key?: string;
  readonly user?: string;
  readonly password?: string;
  readonly dialTimeout?: string;
}

/** The flag names, each with its variable; the values are strings in both. */
export const CONNECTION_FLAGS = {
  endpoints: 'ETCDCTL_ENDPOINTS',
  cacert: 'ETCDCTL_CACERT',
  cert: 'ETCDCTL_CERT',
  key: 'ETCDCTL_KEY',
  user: 'ETCDCTL_USER',
  password: 'ETCDCTL_PASSWORD',
  'dial-timeout': 'ETCDCTL_DIAL_TIMEOUT',
} as const;

/** etcdctl's default endpoint. */
const DEFAULT_ENDPOINT = '127.0.0.1:2379';
/** etcdctl's default --dial-timeout. */
const DEFAULT_DIAL_TIMEOUT = '2s';

/** Flags (parsed, `--endpoints` split on commas) over the environment's ETCDCTL_* variables. */
export function connectionFlags(
  flags: Readonly<Record<string, string | readonly string[] | boolean | undefined>>,
  env: NodeJS.ProcessEnv,
): ConnectionFlags {
  const value = (name: keyof typeof CONNECTION_FLAGS): string | undefined => {
    const given = flags[name];
    if (typeof given === 'string') return given;
    if (Array.isArray(given)) return given.join(',');
    const fromEnv = env[CONNECTION_FLAGS[name]];
    return fromEnv === '' ? undefined : fromEnv;
  };
  const endpoints = value('endpoints')
    ?.split(',')
    .map((endpoint) => endpoint.trim())
    .filter((endpoint) => endpoint !== '');
  return {
    endpoints,
    cacert: value('cacert'),
    cert: value('cert'),
    key: value('key'),
    user: value('user'),
    password: value('password'),
    dialTimeout: value('dial-timeout'),
  };
}

/**
 * The client's options for `flags`. Bare `host:port` endpoints use TLS when a certificate flag is
 * given, as etcdctl's do; `--user name:password` carries its password like etcdctl's.
 */
export function etcdOptions(flags: ConnectionFlags): EtcdOptions {
  const tls = flags.cacert !== undefined || flags.cert !== undefined || flags.key !== undefined;
  if ((flags.cert === undefined) !== (flags.key === undefined)) {
    throw usageError('--cert and --key go together (ETCDCTL_CERT, ETCDCTL_KEY)');
  }
  const endpoints = (flags.endpoints ?? [DEFAULT_ENDPOINT]).map((endpoint) =>
    endpoint.includes('://') || endpoint.startsWith('unix:')
      ? endpoint
      : `${tls ? 'https' : 'http'}://${endpoint}`,
  );
  if (endpoints.length === 0) throw usageError('--endpoints: no endpoint given');
  return {
    endpoints,
    dialTimeoutMs: parseDurationMs('dial-timeout', flags.dialTimeout ?? DEFAULT_DIAL_TIMEOUT),
    ...(tls
      ? {
          tls: {
            ca: readPem('cacert', flags.cacert),
            cert: readPem('cert', flags.cert),
            key: readPem('key', flags.key),
          },
        }
      : {}),
    ...(flags.user === undefined ? {} : { auth: credentials(flags.user, flags.password) }),
  };
}

function credentials(
  user: string,
  password: string | undefined,
): { username: string; password: string } {
  const colon = user.indexOf(':');
  if (colon >= 0) {
    if (password !== undefined) {
      throw usageError('--user has a password (name:password): --password must not be set too');
    }
    return { username: user.slice(0, colon), password: user.slice(colon + 1) };
  }
  if (password === undefined) {
    // etcdctl prompts here; a supervisor usually has no terminal, so it must be given.
    throw usageError(`--user ${user} needs a password: --user name:password, or --password`);
  }
  return { username: user, password };
}

function readPem(flag: string, path: string | undefined): string | undefined {
  if (path === undefined) return undefined;
  try {
    return readFileSync(path, 'utf8');
  } catch (error) {
    throw new CliError('TLS_FILE', `--${flag}: cannot read ${path}`, { cause: error });
  }
}
