// Shared helpers of the recipes' lock, election and session suites.
import { type ChildProcessWithoutNullStreams, spawn } from 'node:child_process';
import { Etcd, type KV, type WatchRequest } from '@etcdkit/client';
import { afterAll, afterEach, beforeAll, expect } from 'vitest';
import { Session, type SessionOptions } from '../src/session/session.js';

/** Resolves with what `promise` rejected with; fails the test if it resolves. */
export async function rejection(promise: Promise<unknown>): Promise<unknown> {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  throw new Error('expected a rejection');
}

/** Matches an error by class name and stable code. */
export function typedError(name: string, code: string): unknown {
  return expect.objectContaining({ name, code });
}

/** A promise with its resolver, to order steps of concurrent transactions. */
export function deferred(): { promise: Promise<void>; resolve: () => void } {
  let resolve!: () => void;
  const promise = new Promise<void>((r) => {
    resolve = r;
  });
  return { promise, resolve };
}

export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** True when `promise` is still pending after `ms`. */
export async function stillPending(promise: Promise<unknown>, ms: number): Promise<boolean> {
  const pending = Symbol('pending');
  const winner = await Promise.race([
    promise.then(
      () => 'settled',
      () => 'settled',
    ),
    sleep(ms).then(() => pending),
  ]);
  return winner === pending;
}

/** Polls `check` until it returns true (every 20 ms), failing after `timeoutMs`. */
export async function eventually(
  check: () => Promise<boolean> | boolean,
  timeoutMs = 5_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleep(20);
  }
}

/**
 * Clients and sessions for one test, closed by {@link close} (call it in afterEach): every test
 * leaves no lease kept alive and no connection open.
 */
export class Fixture {
  readonly #clients: Etcd[] = [];
  readonly #sessions: Session[] = [];
  readonly #children: ChildProcessWithoutNullStreams[] = [];

  constructor(private readonly endpoints: () => readonly string[]) {}

  /** A new client (its own connection, so its own keepalive and watch streams). */
  client(): Etcd {
    const etcd = new Etcd({ endpoints: [...this.endpoints()] });
    this.#clients.push(etcd);
    return etcd;
  }

  /** A session on a new client (default) or on `etcd`. */
  async session(options: SessionOptions = {}, etcd: Etcd = this.client()): Promise<Session> {
    const session = await Session.create(etcd, options);
    this.#sessions.push(session);
    return session;
  }

  /** Spawns `etcdctl` against the backend; killed by {@link close} if still running. */
  etcdctl(args: readonly string[]): EtcdctlProcess {
    const child = spawn(
      process.env.ETCDKIT_ETCDCTL_BIN ?? 'etcdctl',
      ['--endpoints', this.endpoints().join(','), '--dial-timeout', '2s', ...args],
      { env: { ...process.env, ETCDCTL_API: '3' }, stdio: 'pipe' },
    );
    this.#children.push(child);
    return new EtcdctlProcess(child);
  }

  async close(): Promise<void> {
    for (const child of this.#children.splice(0)) {
      if (child.exitCode === null && child.signalCode === null) {
        child.kill('SIGKILL');
        await new Promise((resolve) => child.once('exit', resolve));
      }
    }
    for (const session of this.#sessions.splice(0)) await session.close().catch(() => {});
    for (const etcd of this.#clients.splice(0)) await etcd.close();
  }
}

/** A running `etcdctl` and its output, line by line. */
export class EtcdctlProcess {
  readonly lines: string[] = [];
  #stderr = '';
  readonly exited: Promise<number | null>;

  constructor(readonly child: ChildProcessWithoutNullStreams) {
    let partial = '';
    child.stdout.setEncoding('utf8');
    child.stdout.on('data', (chunk: string) => {
      partial += chunk;
      const parts = partial.split('\n');
      partial = parts.pop() ?? '';
      this.lines.push(...parts);
    });
    child.stderr.setEncoding('utf8');
    child.stderr.on('data', (chunk: string) => {
      this.#stderr += chunk;
    });
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
  }

  /** Resolves once `count` lines were printed; fails after `timeoutMs` or if etcdctl exits. */
  async waitForLines(count: number, timeoutMs = 10_000): Promise<string[]> {
    await eventually(() => {
      if (this.child.exitCode !== null && this.lines.length < count) {
        throw new Error(`etcdctl exited with ${this.child.exitCode}: ${this.#stderr}`);
      }
      return this.lines.length >= count;
    }, timeoutMs);
    return this.lines.slice(0, count);
  }

  /** SIGTERM (etcdctl then unlocks or resigns), and waits for the exit. */
  async terminate(): Promise<number | null> {
    this.child.kill('SIGTERM');
    return this.exited;
  }

  get stderr(): string {
    return this.#stderr;
  }
}

/**
 * `etcd` with its `watch` and `range` calls recorded (the same client underneath), to check which
 * keys a recipe watches.
 */
export function recording(etcd: Etcd): { etcd: Etcd; watches: WatchRequest[] } {
  const watches: WatchRequest[] = [];
  const proxy = new Proxy(etcd, {
    get(target, property) {
      if (property === 'watch') {
        return (request: WatchRequest) => {
          watches.push(request);
          return target.watch(request);
        };
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { etcd: proxy, watches };
}

/** A KV whose `range` runs `after` once the read answered, before returning it. */
export function withHookAfterRange(kv: KV, after: () => Promise<void>): KV {
  let done = false;
  return new Proxy(kv, {
    get(target, property) {
      if (property === 'range') {
        return async (request: Parameters<KV['range']>[0]) => {
          const result = await target.range(request);
          if (!done) {
            done = true;
            await after();
          }
          return result;
        };
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/**
 * `etcd` whose txn commits run `after(n)` (n = 1, 2, ... per commit) once the txn answered and
 * before its result is returned: to change the store between a recipe's read (a txn) and the
 * watch it starts from that read.
 */
export function withHookAfterCommit(etcd: Etcd, after: (commit: number) => Promise<void>): Etcd {
  let commits = 0;
  const wrap = <T extends object>(txn: T): T =>
    new Proxy(txn, {
      get(target, property) {
        const value: unknown = Reflect.get(target, property, target);
        if (typeof value !== 'function') return value;
        if (property === 'commit') {
          return async (...args: unknown[]) => {
            const result: unknown = await value.apply(target, args);
            await after(++commits);
            return result;
          };
        }
        if (property === 'if' || property === 'then' || property === 'else') {
          return (...args: unknown[]) => wrap(value.apply(target, args) as object);
        }
        return value.bind(target);
      },
    });
  return new Proxy(etcd, {
    get(target, property) {
      if (property === 'txn') return () => wrap(target.txn());
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
}

/** What {@link suiteClients} gives a suite: its Fixture and a client of its own for checks. */
export interface SuiteClients {
  readonly fixture: Fixture;
  /** A client for the test's own reads and writes (made before the suite, closed after it). */
  admin(): Etcd;
}

/**
 * Inside a describeEachBackend body: a Fixture closed after each test and an admin client for the
 * suite, with the hooks that make and close them.
 */
export function suiteClients(endpoints: () => readonly string[]): SuiteClients {
  const fixture = new Fixture(endpoints);
  let admin: Etcd | undefined;
  beforeAll(() => {
    admin = new Etcd({ endpoints: [...endpoints()] });
  });
  afterEach(() => fixture.close());
  afterAll(() => admin?.close());
  return {
    fixture,
    admin: () => {
      if (admin === undefined) throw new Error('the admin client exists only inside the suite');
      return admin;
    },
  };
}

/** A client whose watches are recorded with the watcher each made. */
export function watching(etcd: Etcd) {
  const watches: Array<{ request: WatchRequest; watcher: ReturnType<Etcd['watch']> }> = [];
  const proxy = new Proxy(etcd, {
    get(target, property) {
      if (property === 'watch') {
        return (request: WatchRequest) => {
          const watcher = target.watch(request);
          watches.push({ request, watcher });
          return watcher;
        };
      }
      const value: unknown = Reflect.get(target, property, target);
      return typeof value === 'function' ? value.bind(target) : value;
    },
  });
  return { etcd: proxy, watches };
}

/** A key or range end as the recipes send it, as text (latin1 keeps every byte). */
export const keyText = (bytes: string | Uint8Array | undefined): string =>
  typeof bytes === 'string' ? bytes : Buffer.from(bytes ?? []).toString('latin1');

/** The range a watch request covers, as text: what the line tests compare watch lists by. */
export const watchedRange = (request: WatchRequest): { start: string; end: string } => ({
  start: keyText(request.range?.start),
  end: keyText(request.range?.end),
});
