// etcd's own flag names, parsed the way etcd (Go's flag package) parses them: `-flag` or `--flag`,
// `--flag=value` or `--flag value`, booleans as `--flag` or `--flag=false`, the last occurrence
// wins, parsing stops at `--` or the first argument that is not a flag. A flag not given on the
// command line may come from the environment as `ETCD_<NAME>` (`ETCD_MAX_TXN_OPS`), as with etcd.
import { parseGoDuration } from './duration.js';

/** The type of a flag's value. */
export type FlagKind = 'string' | 'bool' | 'uint' | 'int' | 'duration';

/**
 * What the server does with a flag: `supported` ones work as in etcd; `ignored` ones are
 * accepted with a warning (scripts written for etcd pass them) and change nothing; `unsupported`
 * ones are refused with an explanation.
 */
export type FlagSupport = 'supported' | 'ignored' | 'unsupported';

/** One flag of the command line. */
export interface FlagSpec {
  readonly name: string;
  readonly kind: FlagKind;
  /** The default as shown in the usage text. */
  readonly defaultText: string;
  readonly help: string;
  readonly support: FlagSupport;
  /** `etcd` for etcd's own flags; `etcdkit` for the few that only etcdkit-server has. */
  readonly origin: 'etcd' | 'etcdkit';
}

const flag = (
  name: string,
  kind: FlagKind,
  defaultText: string,
  help: string,
  support: FlagSupport = 'supported',
): FlagSpec => ({ name, kind, defaultText, help, support, origin: 'etcd' });

/** Every flag the CLI knows, in the order the usage text lists them. */
export const FLAGS: readonly FlagSpec[] = [
  flag('name', 'string', 'default', 'Human-readable name of the member (MemberList).'),
  flag(
    'listen-client-urls',
    'string',
    'http://localhost:2379',
    'Comma-separated URLs to serve clients on (http or https; an IP address or localhost).',
  ),
  flag(
    'advertise-client-urls',
    'string',
    'the listen URLs',
    'Comma-separated client URLs this member reports (MemberList).',
  ),
  flag('cert-file', 'string', '', 'TLS certificate of the client port (PEM).'),
  flag('key-file', 'string', '', 'TLS private key of the client port (PEM).'),
  flag(
    'trusted-ca-file',
    'string',
    '',
    'CA that client certificates must chain to; makes client certificates required.',
  ),
  flag('client-cert-auth', 'bool', 'false', 'Require a valid client certificate (mutual TLS).'),
  flag('max-txn-ops', 'uint', '128', 'Most operations in one list of a txn.'),
  flag('max-request-bytes', 'uint', '1572864', 'Largest client request, in bytes.'),
  flag(
    'quota-backend-bytes',
    'int',
    '0',
    'Backend quota in bytes; NOSPACE is raised when reached (0: 2 GiB; negative: none).',
  ),
  flag(
    'auto-compaction-retention',
    'string',
    '0',
    'History to keep: hours or a duration (periodic), revisions (revision); 0 disables.',
  ),
  flag(
    'auto-compaction-mode',
    'string',
    'periodic',
    "How to read the retention: 'periodic' or 'revision'.",
  ),
  flag(
    'experimental-watch-progress-notify-interval',
    'duration',
    '10m',
    'Interval of watch progress notifications (at least 100ms).',
  ),
  flag(
    'heartbeat-interval',
    'uint',
    '100',
    'Raft heartbeat in ms; with the election timeout it sets the minimum lease TTL.',
  ),
  flag(
    'election-timeout',
    'uint',
    '1000',
    'Raft election timeout in ms; the minimum lease TTL is 1.5 times it, in whole seconds.',
  ),
  flag('log-level', 'string', 'info', 'debug, info, warn, error, panic or fatal.'),
  flag('log-outputs', 'string', 'default', "Where logs go: 'default' or 'stderr', or 'stdout'."),
  flag('logger', 'string', 'zap', "Log format; only 'zap' (JSON lines) is written."),
  flag('version', 'bool', 'false', 'Print the version and exit.'),
  flag('help', 'bool', 'false', 'Print this help and exit.'),
  flag(
    'data-dir',
    'string',
    'none: in memory',
    "Directory to keep the state in; it survives restarts and crashes. etcdkit-server's own " +
      "format: a directory holding anything else (a real etcd's member/) is refused.",
  ),
  flag('snapshot-count', 'uint', '10000', 'Log records between two snapshots of the data dir.'),
  flag('auth-token', 'string', 'simple', "Token type; only 'simple' tokens are issued."),
  flag('auth-token-ttl', 'uint', '300', 'Seconds an unused simple token lives.'),
  {
    ...flag(
      'etcd-version',
      'string',
      '3.5',
      'The etcd version to answer as: 3.4, 3.5 or 3.6 (the one you deploy), or 3.7 (etcd main, ' +
        'with RangeStream). Status reports its release (3.4.23, 3.5.30, 3.6.14, 3.7.0) and every ' +
        'behaviour that changed between releases follows it.',
    ),
    origin: 'etcdkit',
  },
  {
    ...flag(
      'simulated-members',
      'uint',
      '0: one server',
      'Serve a simulated cluster of this many members (1 to 9) on consecutive ports from the ' +
        'port of --listen-client-urls (0: a free port each), driven by commands on stdin.',
    ),
    origin: 'etcdkit',
  },
  ...[
    ['wal-dir', 'string'],
    ['max-snapshots', 'uint'],
    ['max-wals', 'uint'],
    ['listen-peer-urls', 'string'],
    ['initial-advertise-peer-urls', 'string'],
    ['initial-cluster', 'string'],
    ['initial-cluster-state', 'string'],
    ['initial-cluster-token', 'string'],
    ['strict-reconfig-check', 'bool'],
    ['enable-v2', 'bool'],
    ['enable-pprof', 'bool'],
    ['metrics', 'string'],
    ['listen-metrics-urls', 'string'],
  ].map(([name, kind]) =>
    flag(
      name!,
      kind as FlagKind,
      '',
      'Accepted and ignored (a single member, no peers).',
      'ignored',
    ),
  ),
  ...[
    ['config-file', 'string', 'configuration files are not read; pass flags'],
    ['auto-tls', 'bool', 'give --cert-file and --key-file'],
    ['client-crl-file', 'string', 'certificate revocation lists are not checked'],
    ['cipher-suites', 'string', "Node.js's TLS defaults are used"],
    ['discovery', 'string', 'there is no cluster to discover'],
    ['peer-cert-file', 'string', 'there is no peer port'],
    ['peer-key-file', 'string', 'there is no peer port'],
    ['peer-trusted-ca-file', 'string', 'there is no peer port'],
    ['peer-client-cert-auth', 'bool', 'there is no peer port'],
    ['peer-auto-tls', 'bool', 'there is no peer port'],
    ['enable-grpc-gateway', 'bool', 'the JSON gateway is not served'],
    ['proxy', 'string', 'the v2 proxy is not served'],
  ].map(([name, kind, reason]) => flag(name!, kind as FlagKind, '', reason!, 'unsupported')),
];

const BY_NAME = new Map(FLAGS.map((spec) => [spec.name, spec]));

/** The spec of a flag, by name without dashes. */
export function flagSpec(name: string): FlagSpec | undefined {
  return BY_NAME.get(name);
}

/** A command line etcd would refuse to parse (exit code 2, with the usage). */
export class FlagError extends Error {
  /** Stable identifier of the failure. */
  readonly code = 'INVALID_FLAGS';

  constructor(message: string) {
    super(message);
    this.name = 'FlagError';
  }
}

/** Flags as given: raw values by name; where each came from. */
export interface ParsedFlags {
  /** Values by flag name (without dashes); booleans as `true` / `false`. */
  readonly values: ReadonlyMap<string, string>;
  /** Names that came from `ETCD_*` environment variables rather than the command line. */
  readonly fromEnvironment: ReadonlySet<string>;
}

/** Parses `args` (without the program name), then fills unset flags from `env`. */
export function parseFlags(
  args: readonly string[],
  env: Readonly<Record<string, string | undefined>> = {},
): ParsedFlags {
  const values = new Map<string, string>();
  let index = 0;
  while (index < args.length) {
    const arg = args[index]!;
    if (arg === '--') {
      index++;
      break;
    }
    if (!arg.startsWith('-') || arg === '-') break;
    index++;
    const body = arg.startsWith('--') ? arg.slice(2) : arg.slice(1);
    if (body === '' || body.startsWith('-') || body.startsWith('=')) {
      throw new FlagError(`bad flag syntax: ${arg}`);
    }
    const equals = body.indexOf('=');
    const name = equals < 0 ? body : body.slice(0, equals);
    const spec = name === 'h' ? flagSpec('help') : flagSpec(name);
    if (spec === undefined) throw new FlagError(`flag provided but not defined: --${name}`);
    let value: string;
    if (equals >= 0) {
      value = body.slice(equals + 1);
    } else if (spec.kind === 'bool') {
      value = 'true';
    } else {
      const next = args[index];
      if (next === undefined) throw new FlagError(`flag needs an argument: --${name}`);
      value = next;
      index++;
    }
    values.set(spec.name, checkValue(spec, value));
  }
  if (index < args.length) {
    throw new FlagError(`'${args[index]}' is not a valid flag`);
  }
  const fromEnvironment = new Set<string>();
  for (const spec of FLAGS) {
    if (values.has(spec.name) || spec.name === 'help' || spec.name === 'version') continue;
    const value = env[environmentName(spec.name)];
    if (value === undefined) continue;
    values.set(spec.name, checkValue(spec, value, environmentName(spec.name)));
    fromEnvironment.add(spec.name);
  }
  return { values, fromEnvironment };
}

/** The environment variable etcd reads a flag from: `ETCD_` and the name in upper snake case. */
export function environmentName(flagName: string): string {
  return `ETCD_${flagName.toUpperCase().replaceAll('-', '_')}`;
}

const TRUE = new Set(['1', 't', 'T', 'true', 'TRUE', 'True']);
const FALSE = new Set(['0', 'f', 'F', 'false', 'FALSE', 'False']);

function checkValue(spec: FlagSpec, value: string, source = `--${spec.name}`): string {
  const invalid = (): FlagError =>
    new FlagError(`invalid value ${JSON.stringify(value)} for flag ${source}: parse error`);
  switch (spec.kind) {
    case 'bool':
      if (TRUE.has(value)) return 'true';
      if (FALSE.has(value)) return 'false';
      throw invalid();
    case 'uint':
      if (!/^\d+$/.test(value)) throw invalid();
      return value;
    case 'int':
      if (!/^[-+]?\d+$/.test(value)) throw invalid();
      return value;
    case 'duration':
      if (parseGoDuration(value) === undefined) throw invalid();
      return value;
    case 'string':
      return value;
  }
}
