// The help text, built from the flag table so it never drifts from what the parser accepts.
import { FLAGS, type FlagSpec } from './flags.js';

const PROGRAM = 'etcdkit-server';

function describe(spec: FlagSpec): string {
  const value = spec.kind === 'bool' ? '' : ` <${spec.kind === 'string' ? 'value' : spec.kind}>`;
  const fallback = spec.defaultText === '' ? '' : ` (default ${spec.defaultText})`;
  return `  --${spec.name}${value}${fallback}\n      ${spec.help}`;
}

/** The full help (`--help`). */
export function usage(): string {
  const section = (support: FlagSpec['support']) =>
    FLAGS.filter((spec) => spec.support === support).map(describe);
  const names = (support: FlagSpec['support']) =>
    FLAGS.filter((spec) => spec.support === support)
      .map((spec) => `--${spec.name}`)
      .join(', ');
  return [
    `Usage: ${PROGRAM} [flags]`,
    '',
    "An etcd v3 server in memory (@etcdkit/server-embedded), taking etcd's own flag names.",
    'Flags are --flag value or --flag=value; a flag not given is read from ETCD_<FLAG_NAME>.',
    '',
    'Flags:',
    ...section('supported'),
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
