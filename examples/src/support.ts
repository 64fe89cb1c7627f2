// Helpers the examples share: command-line flags and a timeline printer. Not part of any package.
import { Etcd } from '@etcdkit/client';
import { EmbeddedEtcd } from '@etcdkit/server-embedded';

/** The `--endpoints a,b` (or `--endpoints=a,b`) flag; `undefined` when absent. */
export function parseEndpoints(argv: readonly string[]): string[] | undefined {
  const value = flag(argv, 'endpoints');
  return value ? value.split(',').filter(Boolean) : undefined;
}

/** The value of `--name value` or `--name=value`; `undefined` when absent. */
export function flag(argv: readonly string[], name: string): string | undefined {
  const at = argv.indexOf(`--${name}`);
  if (at >= 0) return argv[at + 1];
  return argv.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
}

/** True when `--name` is given. */
export function hasFlag(argv: readonly string[], name: string): boolean {
  return argv.includes(`--${name}`);
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
 * Connects to `--endpoints` when given, otherwise starts an embedded server on a free loopback port
 * and connects to it, so every example runs with one command and no etcd installed.
 */
export async function connect(argv: readonly string[] = process.argv.slice(2)): Promise<Connected> {
  const given = parseEndpoints(argv);
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
