// The help text, built from the flag table so it never drifts from what the parser accepts.
import { CLUSTER_COMMANDS, commandSynopsis } from './cluster-commands.js';
import { FLAGS, type FlagSpec } from './flags.js';

const PROGRAM = 'etcdkit-server';

function describe(spec: FlagSpec): string {
  const value = spec.kind === 'bool' ? '' : ` <${spec.kind === 'string' ? 'value' : spec.kind}>`;
  const fallback = spec.defaultText === '' ? '' : ` (default ${spec.defaultText})`;
  return `  --${spec.name}${value}${fallback}\n      ${spec.help}`;
}

/** The full help (`--help`). */
export function usage(): string {
  const section = (support: FlagSpec['support'], origin: FlagSpec['origin'] = 'etcd') =>
    FLAGS.filter((spec) => spec.support === support && spec.origin === origin).map(describe);
  const width = Math.max(...CLUSTER_COMMANDS.map((command) => commandSynopsis(command).length));
  const names = (support: FlagSpec['support']) =>
    FLAGS.filter((spec) => spec.support === support)
      .map((spec) => `--${spec.name}`)
      .join(', ');
  return [
    `Usage: ${PROGRAM} [flags]`,
    '',
    "An etcd v3 server in one Node.js process (@etcdkit/server-embedded), taking etcd's own flag",
    'names: a single member, its state in memory, or on disk with --data-dir (in its own format:',
    "it cannot read a real etcd's data dir, and refuses one).",
    'Flags are --flag value or --flag=value; a flag not given is read from ETCD_<FLAG_NAME>.',
    '',
    'Flags:',
    ...section('supported'),
    '',
    "etcdkit-server's own flags (not etcd's):",
    ...section('supported', 'etcdkit'),
    '',
    'With --simulated-members the members listen on 127.0.0.1; --name, --advertise-client-urls,',
    '--data-dir and --snapshot-count are refused. stdout lists the members, then the endpoints:',
    '  member <name> <member-id-hex> <client-url>',
    '  endpoints <client-url>,<client-url>,...',
    '  ready: one command a line on stdin; help lists them',
    'and each command read from stdin is answered with one line: ok and the cluster state',
    '(leader=<name> term=<n> <name>=<state>...), or error and why. The end of stdin ends the',
    'commands, not the cluster. The commands (<member>: a name, member0..., or a member id):',
    ...CLUSTER_COMMANDS.map(
      (command) => `  ${commandSynopsis(command).padEnd(width)}  ${command.help}`,
    ),
    '',
    'Accepted with a warning and no effect:',
    `  ${names('ignored')}`,
    '',
    'Refused (etcd flags this server cannot honour):',
    `  ${names('unsupported')}`,
    '',
  ].join('\n');
}

/** The short reminder printed after a flag error. */
export function shortUsage(): string {
  return `Usage: ${PROGRAM} [flags]\nRun '${PROGRAM} --help' for the flags.\n`;
}
