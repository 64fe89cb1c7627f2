// The command line: `etcdkit <command> [flags] NAME [-- CMD ARGS...]`, with etcdctl's connection
// flags anywhere before `--`.
import { type ParseArgsConfig, parseArgs } from 'node:util';
import { CONNECTION_FLAGS, type ConnectionFlags, connectionFlags } from './connection-flags.js';
import { parseSecondsMs } from './duration.js';
import { usageError } from './errors.js';
import { defaultKillGraceMs, graceFits, killMarginMs } from './kill-deadline.js';

/** How a hold is kept and CMD stopped; shared by every command. */
export interface HoldFlags {
  /** The session lease's TTL, whole seconds. */
  readonly ttlSeconds: number;
  /** How long to wait for the hold before giving up; undefined waits for ever. */
  readonly waitTimeoutMs: number | undefined;
  /** Between SIGTERM and SIGKILL to CMD's process group. */
  readonly killGraceMs: number;
}

interface Common {
  readonly connection: ConnectionFlags;
  readonly name: string;
  readonly hold: HoldFlags;
  /** CMD and its arguments; empty for etcdctl's behaviour without a command. */
  readonly command: readonly string[];
}

/** What the command line asks for. */
export type Invocation =
  | { readonly kind: 'help'; readonly topic: CommandName | undefined }
  | ({ readonly kind: 'lock' } & Common)
  | ({ readonly kind: 'semaphore'; readonly limit: number } & Common)
  | ({
      readonly kind: 'elect';
      /** The value campaigned with (`--value`, or etcdctl's proposal argument). */
      readonly value: string | undefined;
      /** Campaign again after CMD exits or the leadership is lost. */
      readonly restart: boolean;
      /** etcdctl's `-l`: print the leaders as they change. */
      readonly listen: boolean;
    } & Common);

/** The commands. */
export type CommandName = 'lock' | 'elect' | 'semaphore';
const COMMANDS: readonly CommandName[] = ['lock', 'elect', 'semaphore'];

const OPTIONS = {
  help: { type: 'boolean', short: 'h' },
  endpoints: { type: 'string', multiple: true },
  cacert: { type: 'string' },
  cert: { type: 'string' },
  key: { type: 'string' },
  user: { type: 'string' },
  password: { type: 'string' },
  'dial-timeout': { type: 'string' },
  ttl: { type: 'string' },
  'wait-timeout': { type: 'string' },
  'kill-grace': { type: 'string' },
  limit: { type: 'string' },
  value: { type: 'string' },
  restart: { type: 'boolean' },
  listen: { type: 'boolean', short: 'l' },
} as const satisfies ParseArgsConfig['options'];

type OptionName = keyof typeof OPTIONS;

function parse(argv: readonly string[]) {
  try {
    return parseArgs({
      args: [...argv],
      options: OPTIONS,
      allowPositionals: true,
      strict: true,
      tokens: true,
    });
  } catch (error) {
    throw usageError((error as Error).message);
  }
}
const HOLD_OPTIONS: readonly OptionName[] = ['ttl', 'wait-timeout', 'kill-grace'];
const COMMAND_OPTIONS: Record<CommandName, readonly OptionName[]> = {
  lock: HOLD_OPTIONS,
  semaphore: [...HOLD_OPTIONS, 'limit'],
  elect: [...HOLD_OPTIONS, 'value', 'restart', 'listen'],
};
/** etcdctl's session TTLs: 10 s for `lock`, the session default of 60 s for `elect`. */
const DEFAULT_TTL: Record<CommandName, number> = { lock: 10, semaphore: 10, elect: 60 };

/** Parses `argv` (without node and the script); bad input throws a usage CliError. */
export function parseInvocation(argv: readonly string[], env: NodeJS.ProcessEnv): Invocation {
  const { values, tokens } = parse(argv);
  const terminator = tokens.find((token) => token.kind === 'option-terminator')?.index;
  const before = (index: number): boolean => terminator === undefined || index < terminator;
  const positionals = tokens.flatMap((token) =>
    token.kind === 'positional' && before(token.index) ? [token.value] : [],
  );
  const afterTerminator = tokens.flatMap((token) =>
    token.kind === 'positional' && !before(token.index) ? [token.value] : [],
  );
  const [commandWord, ...operands] = positionals;
  if (commandWord === undefined) {
    if (values.help || argv.length === 0) return { kind: 'help', topic: undefined };
    throw usageError('no command: etcdkit lock | elect | semaphore (etcdkit --help)');
  }
  if (!COMMANDS.includes(commandWord as CommandName)) {
    throw usageError(`unknown command ${JSON.stringify(commandWord)} (etcdkit --help)`);
  }
  const command = commandWord as CommandName;
  if (values.help) return { kind: 'help', topic: command };
  for (const token of tokens) {
    if (token.kind !== 'option') continue;
    const name = token.name as OptionName;
    if (name in CONNECTION_FLAGS || name === 'help') continue;
    if (!COMMAND_OPTIONS[command].includes(name)) {
      throw usageError(`etcdkit ${command} has no --${name} (etcdkit ${command} --help)`);
    }
  }
  const [name, ...rest] = operands;
  if (name === undefined || name === '') {
    throw usageError(`etcdkit ${command} takes a NAME (etcdkit ${command} --help)`);
  }
  const common = {
    connection: connectionFlags(values, env),
    name,
    hold: holdFlags(values, DEFAULT_TTL[command]),
  };
  switch (command) {
    case 'lock':
      // etcdctl's form `lock NAME CMD ARGS` works too, as long as ARGS hold no flag.
      return { kind: 'lock', ...common, command: [...rest, ...afterTerminator] };
    case 'semaphore': {
      if (rest.length > 0 && afterTerminator.length === 0) {
        throw usageError(`etcdkit semaphore: put the command after --: -- ${rest.join(' ')}`);
      }
      return { kind: 'semaphore', ...common, limit: limit(values.limit), command: afterTerminator };
    }
    case 'elect':
      return electInvocation(common, values, rest, afterTerminator);
  }
}

function electInvocation(
  common: Omit<Common, 'command'>,
  values: { readonly value?: string; readonly restart?: boolean; readonly listen?: boolean },
  rest: readonly string[],
  command: readonly string[],
): Invocation {
  if (rest.length > 1 || (rest.length === 1 && values.value !== undefined)) {
    throw usageError('etcdkit elect takes NAME and at most one proposal (or --value)');
  }
  const value = values.value ?? rest[0];
  const listen = values.listen ?? false;
  const restart = values.restart ?? false;
  if (listen && (value !== undefined || command.length > 0 || restart)) {
    throw usageError('etcdkit elect -l only observes: no proposal, --value, --restart or command');
  }
  if (!listen && value === undefined && command.length === 0) {
    throw usageError('etcdkit elect NAME needs a proposal, a command (-- CMD) or -l');
  }
  if (restart && command.length === 0) throw usageError('--restart needs a command (-- CMD)');
  return { kind: 'elect', ...common, value, restart, listen, command };
}

function holdFlags(
  values: {
    readonly ttl?: string;
    readonly 'wait-timeout'?: string;
    readonly 'kill-grace'?: string;
  },
  defaultTtl: number,
): HoldFlags {
  const ttlMs =
    values.ttl === undefined ? defaultTtl * 1000 : parseSecondsMs('ttl', values.ttl, true);
  const waitTimeout = values['wait-timeout'];
  const killGraceMs =
    values['kill-grace'] === undefined
      ? defaultKillGraceMs(ttlMs)
      : parseSecondsMs('kill-grace', values['kill-grace']);
  if (!graceFits(ttlMs, killGraceMs)) {
    throw usageError(
      `--kill-grace ${killGraceMs / 1000}s does not fit a --ttl of ${ttlMs / 1000}s: CMD must be ` +
        `stopped ${killMarginMs(ttlMs) / 1000}s before its lease can expire, and SIGTERM must ` +
        'come after the next keepalive; raise --ttl or lower --kill-grace',
    );
  }
  return {
    ttlSeconds: ttlMs / 1000,
    waitTimeoutMs:
      waitTimeout === undefined ? undefined : parseSecondsMs('wait-timeout', waitTimeout),
    killGraceMs,
  };
}

function limit(text: string | undefined): number {
  if (text === undefined) throw usageError('etcdkit semaphore needs --limit N');
  const n = Number(text);
  if (!/^\d+$/.test(text) || !Number.isSafeInteger(n) || n < 1) {
    throw usageError(`--limit: ${JSON.stringify(text)} is not a positive integer`);
  }
  return n;
}
