// What the memory benchmarks share: a forced full GC, the heap measure, and an embedded server in
// a child process, so that the client's heap and the server's are measured apart.
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { setFlagsFromString } from 'node:v8';
import { runInNewContext } from 'node:vm';
import type { BuiltPackages } from './built-packages.js';

/** A function that runs a full garbage collection (three times, to settle weak references). */
export function collector(): () => void {
  setFlagsFromString('--expose-gc');
  const gc = runInNewContext('gc') as () => void;
  return () => {
    for (let i = 0; i < 3; i++) gc();
  };
}

/** Bytes in use: the JS heap plus ArrayBuffers (gRPC frames and protobuf bytes live there). */
export function used(): number {
  const m = process.memoryUsage();
  return m.heapUsed + m.arrayBuffers;
}

/** What the server process reports, measured after a full GC. */
export interface ServerStats {
  /** Heap plus ArrayBuffers of the server process, in bytes. */
  readonly used: number;
  /** The server process's V8 heap in use, in bytes. */
  readonly heapUsed: number;
  /** The server process's resident set, in bytes. */
  readonly rss: number;
  /** Leases in its lease table. */
  readonly leases: number;
  /** Entries in its lease expiry queue (stale ones included). */
  readonly expiryEntries: number;
  /** Watchers on its watchable store (client watches and its own Lock waits). */
  readonly watchers: number;
}

const script = fileURLToPath(new URL('./memory-server.ts', import.meta.url));

/** An EmbeddedEtcd running in a child process, which reports its own memory on request. */
export class ServerProcess {
  readonly #child: ChildProcess;
  #next = 0;
  readonly #waiting = new Map<number, (stats: ServerStats) => void>();

  private constructor(
    child: ChildProcess,
    /** The server's client endpoints. */
    readonly endpoints: string[],
  ) {
    this.#child = child;
    child.on('message', (message: { id: number; stats: ServerStats }) => {
      this.#waiting.get(message.id)?.(message.stats);
      this.#waiting.delete(message.id);
    });
  }

  /**
   * Starts the server process (with the flags this process runs with, so tsx and conditions).
   * `serverModule` is the path of the module exporting EmbeddedEtcd (default this checkout's), to
   * measure another build of the server, e.g. an older commit's worktree, or built packages.
   */
  static async start(serverModule?: string | BuiltPackages): Promise<ServerProcess> {
    // Built packages (built-packages.ts): their server, with the env and flags that keep its
    // imports of the client and recipes on their builds too.
    const built = typeof serverModule === 'object' ? serverModule : undefined;
    const env = { ...(built?.env ?? process.env) };
    const module = built?.server ?? (serverModule as string | undefined);
    if (module !== undefined) env.ETCDKIT_BENCH_SERVER_MODULE = module;
    // ETCDKIT_BENCH_SERVER_PROF=<dir>: the server process writes a CPU profile there as it stops.
    const profile = process.env.ETCDKIT_BENCH_SERVER_PROF;
    const execArgv = [
      ...(built?.execArgv ?? process.execArgv),
      ...(profile ? ['--cpu-prof', `--cpu-prof-dir=${profile}`] : []),
    ];
    const child = fork(script, [], { execArgv, stdio: 'inherit', env });
    const endpoints = await new Promise<string[]>((resolve, reject) => {
      child.once('message', (message: { endpoints: string[] }) => resolve(message.endpoints));
      child.once('exit', (code) => reject(new Error(`server process exited (${code})`)));
      child.once('error', reject);
    });
    return new ServerProcess(child, endpoints);
  }

  /** The server's memory and counts, after a full GC in its process. */
  stats(): Promise<ServerStats> {
    const id = this.#next++;
    return new Promise((resolve) => {
      this.#waiting.set(id, resolve);
      this.#child.send({ id });
    });
  }

  /** Polls {@link stats} until `done` accepts them (every 100 ms), or fails after `timeoutMs`. */
  async until(done: (stats: ServerStats) => boolean, timeoutMs = 120_000): Promise<ServerStats> {
    const deadline = performance.now() + timeoutMs;
    for (;;) {
      const stats = await this.stats();
      if (done(stats)) return stats;
      if (performance.now() > deadline) throw new Error('the server never reached the state');
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
  }

  /** Ends the server process (nothing to clean: it lives in memory only). */
  async stop(): Promise<void> {
    if (this.#child.exitCode !== null) return;
    const exited = new Promise((resolve) => this.#child.once('exit', resolve));
    this.#child.kill();
    await exited;
  }
}
