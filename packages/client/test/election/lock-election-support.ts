// Helpers of the Lock and Election service suites: the keys in line, waiting for a condition,
// telling whether a promise has settled, and running `etcdctl lock` / `etcdctl elect` against a
// backend.
import { type ChildProcessWithoutNullStreams, spawn, spawnSync } from 'node:child_process';
import type { Etcd } from '../../src/etcd.js';

/** Resolves once `check` returns true (polling every 20 ms); fails after `timeoutMs`. */
/**
 * The keys under `name/` in create-revision order, relative to `name`: a lock's queue or an
 * election's candidates, first the holder or leader.
 */
export async function keysInLine(etcd: Etcd, name: string): Promise<string[]> {
  const result = await etcd.range({
    prefix: `${name}/`,
    sort: { target: 'create', order: 'ascend' },
  });
  return result.kvs.map((kv) => kv.keyText().slice(name.length + 1));
}

export async function eventually(
  check: () => boolean | Promise<boolean>,
  timeoutMs = 5_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    if (await check()) return;
    if (Date.now() > deadline) throw new Error(`condition not met within ${timeoutMs} ms`);
    await sleep(20);
  }
}

/** Waits `ms` milliseconds. */
export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}

/** How a promise stands now: settled ones are told apart without waiting for pending ones. */
export async function settlement(
  promise: Promise<unknown>,
): Promise<'pending' | 'fulfilled' | 'rejected'> {
  const pending = Symbol('pending');
  try {
    const first = await Promise.race([promise, new Promise((r) => setImmediate(() => r(pending)))]);
    return first === pending ? 'pending' : 'fulfilled';
  } catch {
    return 'rejected';
  }
}

/** The etcdctl to run: `ETCDKIT_ETCDCTL_BIN`, or `etcdctl` on PATH. */
export const etcdctlPath = process.env.ETCDKIT_ETCDCTL_BIN ?? 'etcdctl';

/** Whether etcdctl can run here (it ships apart from the server, e.g. Debian's etcd-client). */
export const etcdctlFound = spawnSync(etcdctlPath, ['version']).status === 0;

/** A running etcdctl and the lines it printed. */
export class Etcdctl {
  /** Lines printed on stdout so far. */
  readonly lines: string[] = [];
  /** Resolves with the exit code (or signal) once the process ended. */
  readonly exited: Promise<number | string | null>;
  private readonly child: ChildProcessWithoutNullStreams;
  private stderr = '';

  /** Spawns `etcdctl --endpoints <endpoints> <args>` (API v3). */
  constructor(endpoints: readonly string[], args: readonly string[]) {
    this.child = spawn(etcdctlPath, ['--endpoints', endpoints.join(','), ...args], {
      env: { ...process.env, ETCDCTL_API: '3' },
      stdio: 'pipe',
    });
    let partial = '';
    this.child.stdout.setEncoding('utf8');
    this.child.stdout.on('data', (chunk: string) => {
      const parts = (partial + chunk).split('\n');
      partial = parts.pop() ?? '';
      this.lines.push(...parts);
    });
    this.child.stderr.setEncoding('utf8');
    this.child.stderr.on('data', (chunk: string) => {
      this.stderr += chunk;
    });
    this.exited = new Promise((resolve) =>
      this.child.once('exit', (code, signal) => resolve(code ?? signal)),
    );
  }

  /** True until the process exits. */
  get running(): boolean {
    return this.child.exitCode === null && this.child.signalCode === null;
  }

  /** Resolves with the first `count` lines once printed; fails if etcdctl exits first. */
  async waitForLines(count: number, timeoutMs = 10_000): Promise<string[]> {
    await eventually(() => {
      if (this.lines.length >= count) return true;
      if (!this.running) throw new Error(`etcdctl exited early: ${this.stderr.trim()}`);
      return false;
    }, timeoutMs);
    return this.lines.slice(0, count);
  }

  /** SIGTERM: `etcdctl lock` then unlocks and `etcdctl elect` resigns before exiting. */
  async terminate(): Promise<number | string | null> {
    if (this.running) this.child.kill('SIGTERM');
    return this.exited;
  }

  /** SIGKILL, for cleanup: whatever it held is left to its lease. */
  async kill(): Promise<void> {
    if (this.running) this.child.kill('SIGKILL');
    await this.exited;
  }
}
