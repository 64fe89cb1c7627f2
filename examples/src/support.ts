// Helpers the examples share: flags, connecting, a timeline printer. Not part of any package.
import { parseArgs } from 'node:util';
import { Etcd } from '@etcdkit/client';
import { EmbeddedEtcd } from '@etcdkit/server-embedded';

/** A failure an example reports in one line on stderr, without a stack, and its exit code. */
export class ExampleError extends Error {
  constructor(
    message: string,
    readonly exitCode = 1,
  ) {
    super(message);
  }
}

/** The flags an example takes: each name (without `--`) and what its value looks like. */
export type FlagSpec = Readonly<Record<string, string>>;

/** The `--endpoints` flag every example that can use a real etcd takes. */
export const ENDPOINTS_FLAG = { endpoints: 'http://host:port,...' } as const;

/** The usage line of `program`: `usage: demo [--endpoints http://host:port,...]`. */
export function usage(program: string, spec: FlagSpec): string {
  const flags = Object.entries(spec).map(([name, value]) => ` [--${name} ${value}]`);
  return `usage: ${program}${flags.join('')}`;
}

/**
 * The values of the flags of `spec` in `argv` (`--name value` or `--name=value`; absent ones are
 * `undefined`). An unknown flag, a flag without its value, a positional argument or an empty
 * `--endpoints` throws ExampleError with exit code 2: the problem, a newline and the usage.
 */
export function parseFlags<S extends FlagSpec>(
  program: string,
  argv: readonly string[],
  spec: S,
): { readonly [K in keyof S]?: string } {
  const refuse = (message: string) => new ExampleError(`${message}\n${usage(program, spec)}`, 2);
  let values: Record<string, string | boolean | undefined>;
  try {
    ({ values } = parseArgs({
      args: [...argv],
      options: Object.fromEntries(Object.keys(spec).map((name) => [name, { type: 'string' }])),
      strict: true,
      allowPositionals: false,
    }));
  } catch (error) {
    throw refuse((error as Error).message);
  }
  if (values.endpoints !== undefined && endpointList(String(values.endpoints)).length === 0) {
    throw refuse('--endpoints needs a URL');
  }
  return values as { readonly [K in keyof S]?: string };
}

/**
 * {@link parseFlags} on this process's arguments, for an example's top level: a usage error is
 * printed as `program: <problem>` and the usage, and the process exits with code 2.
 */
export function commandLine<S extends FlagSpec>(
  program: string,
  spec: S,
): { readonly [K in keyof S]?: string } {
  return orExit(program, () => parseFlags(program, process.argv.slice(2), spec));
}

/** The number a flag's `value` gives (`fallback` when absent); not a number >= 0 exits with 2. */
export function numberFlag(
  program: string,
  name: string,
  value: string | undefined,
  fallback: number,
): number {
  return orExit(program, () => {
    const number = value === undefined ? fallback : Number(value);
    if (value?.trim() === '' || Number.isNaN(number) || number < 0) {
      throw new ExampleError(`--${name} must be a number >= 0, got ${JSON.stringify(value)}`, 2);
    }
    return number;
  });
}

function orExit<T>(program: string, parse: () => T): T {
  try {
    return parse();
  } catch (error) {
    if (!(error instanceof ExampleError)) throw error;
    console.error(`${program}: ${error.message}`);
    process.exit(error.exitCode);
  }
}

/** The non-empty URLs of an `--endpoints a,b` value. */
export function endpointList(value: string): string[] {
  return value.split(',').filter(Boolean);
}

/** Resolves after `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/**
 * Prints a live timeline: time since start, who holds the lock (with its fencing token), who
 * leads, the actor, and what happened.
 */
export class Timeline {
  readonly #started = performance.now();
  #holder = '-';
  #leader = '-';

  /** Prints the column titles. */
  header(): void {
    console.log(
      `${'time'.padStart(7)}  ${'lock holder'.padEnd(18)} ${'leader'.padEnd(8)} ${'actor'.padEnd(9)} event`,
    );
  }

  /** Prints a section title. */
  section(title: string): void {
    console.log(`\n-- ${title}`);
  }

  /** Records who holds the lock now (`undefined`: nobody). */
  setHolder(name: string | undefined, token?: bigint): void {
    this.#holder = name === undefined ? '-' : `${name} (#${token})`;
  }

  /** Records who leads now (`undefined`: nobody). */
  setLeader(name: string | undefined): void {
    this.#leader = name ?? '-';
  }

  /** Prints one event. */
  log(actor: string, event: string): void {
    const ms = `+${(performance.now() - this.#started).toFixed(0)}ms`;
    console.log(
      `${ms.padStart(7)}  ${this.#holder.padEnd(18)} ${this.#leader.padEnd(8)} ${actor.padEnd(9)} ${event}`,
    );
  }
}

/** A client, and the embedded server it talks to when no `--endpoints` was given. */
export interface Connected {
  readonly etcd: Etcd;
  readonly endpoints: readonly string[];
  /** The embedded server; `undefined` against a real etcd. */
  readonly server: EmbeddedEtcd | undefined;
  /** Closes the client, then stops the embedded server if one was started. */
  close(): Promise<void>;
}

/**
 * Connects to `endpoints` (an `--endpoints` value, checked by {@link parseFlags}) when given,
 * otherwise starts an embedded server on a free loopback port and connects to it, so every example
 * runs with one command and no etcd installed.
 */
export async function connect(endpointsFlag: string | undefined): Promise<Connected> {
  const given = endpointsFlag === undefined ? undefined : endpointList(endpointsFlag);
  const server = given ? undefined : await EmbeddedEtcd.start();
  const endpoints = given ?? server?.endpoints ?? [];
  const etcd = new Etcd({ endpoints: [...endpoints] });
  console.log(
    `connected to ${given ? 'etcd at' : 'the embedded server at'} ${endpoints.join(', ')}`,
  );
  return {
    etcd,
    endpoints,
    server,
    async close() {
      await etcd.close();
      await server?.stop();
    },
  };
}
