import { randomBytes } from 'node:crypto';
import { join } from 'node:path';
import {
  type EtcdBinary,
  findEtcdBinary,
  lookUpEtcdBinary,
  type TestkitEnv,
} from './etcd-binary.js';
import { EtcdNode, type EtcdTlsOptions, retryPortRaces } from './etcd-node.js';
import { freePorts } from './internal/ports.js';
import { makeTempDir, removeTempDir } from './internal/temp-dir.js';

/** Options of {@link startEtcd}. */
export interface StartEtcdOptions {
  /** Member name (`--name`). Default `etcdkit`. */
  readonly name?: string;
  /**
   * Extra etcd flags, appended after the testkit's own so they win, e.g.
   * `['--auth-token', 'jwt,...', '--quota-backend-bytes', '16777216', '--max-txn-ops', '8']`.
   * A single member runs with `--heartbeat-interval 10 --election-timeout 100` (it has no peers
   * to disagree with, and restarts then elect in ~100 ms instead of ~1.5 s); override both or
   * neither, etcd wants the election timeout to be at least 5 heartbeats.
   */
  readonly args?: readonly string[];
  /** Serve the client port over TLS (`https://` endpoint). */
  readonly tls?: EtcdTlsOptions;
  /**
   * Path of the etcd binary; default the suite's etcd version (describeRealEtcd and the real-etcd
   * copy of describeEachBackend), else `ETCDKIT_ETCD_BIN`, the first of `ETCDKIT_ETCD_BINS`, or
   * `etcd` on PATH.
   */
  readonly binary?: string;
  /** How long to wait for the server to answer, in ms. Default 30 000. */
  readonly startTimeoutMs?: number;
  /** How long {@link EtcdProcess.stop} waits after SIGTERM before SIGKILL, in ms. Default 5 000. */
  readonly stopTimeoutMs?: number;
  /** Environment to look the binary up in; default `process.env`. */
  readonly env?: TestkitEnv;
}

/** A real etcd server process on loopback, in its own temp dir. */
export interface EtcdProcess {
  /** Member name. */
  readonly name: string;
  /** Client URL, `http://127.0.0.1:PORT` (or `https://` with TLS). */
  readonly endpoint: string;
  /** `[endpoint]`, for APIs that take a list. */
  readonly endpoints: readonly string[];
  readonly clientPort: number;
  readonly peerPort: number;
  /** etcd's `--data-dir`. Removed by {@link stop}. */
  readonly dataDir: string;
  /** Server version from `etcd --version`, e.g. `3.4.23`. */
  readonly version: string;
  /** Path of the binary that runs. */
  readonly binary: string;
  /** Process id while running. */
  readonly pid: number | undefined;
  /** Whether the process is alive (paused counts as alive). */
  readonly running: boolean;
  /** SIGTERM, SIGKILL after the stop timeout, then removes the temp dir. Idempotent. */
  stop(): Promise<void>;
  /** SIGKILL, keeping the data dir: a crash. {@link restart} brings it back. */
  kill(): Promise<void>;
  /** Stops the process if it runs (keeping data), starts it on the same ports and data dir. */
  restart(): Promise<void>;
  /** SIGSTOP: connections stay open but nothing answers (half-open peer). */
  pause(): Promise<void>;
  /** SIGCONT after {@link pause}. */
  resume(): void;
  /** Last lines of etcd's output. */
  logs(): string;
}

const DEFAULT_START_TIMEOUT_MS = 30_000;
const DEFAULT_STOP_TIMEOUT_MS = 5_000;
/** A lone member elects itself; short timeouts only make (re)starts fast. */
const SINGLE_MEMBER_TIMING = ['--heartbeat-interval', '10', '--election-timeout', '100'];

/**
 * Starts the real etcd binary on free loopback ports, in a fresh temp dir, and resolves once it
 * serves requests. Always {@link EtcdProcess.stop} it (in `afterAll`/`afterEach`); a process-exit
 * safety net kills forgotten ones.
 */
export async function startEtcd(options: StartEtcdOptions = {}): Promise<EtcdProcess> {
  const binary = resolveEtcdBinary(options.binary, options.env);
  const name = options.name ?? 'etcdkit';
  const startTimeoutMs = options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;
  return retryPortRaces(async () => {
    const workDir = await makeTempDir('etcdkit-etcd-');
    const ports = await freePorts(2);
    const clientPort = ports[0]!;
    const peerPort = ports[1]!;
    const node = new EtcdNode({
      binary,
      name,
      dataDir: join(workDir, 'data'),
      workDir,
      clientPort,
      peerPort,
      initialCluster: `${name}=http://127.0.0.1:${peerPort}`,
      clusterToken: `etcdkit-${randomBytes(6).toString('hex')}`,
      tls: options.tls,
      args: [...SINGLE_MEMBER_TIMING, ...(options.args ?? [])],
      waitForClusterVersion: true,
    });
    try {
      await node.start(startTimeoutMs);
      return new RunningEtcd(node, workDir, startTimeoutMs, options.stopTimeoutMs);
    } catch (error) {
      await node.kill();
      await removeTempDir(workDir);
      throw error;
    }
  });
}

class RunningEtcd implements EtcdProcess {
  readonly endpoints: readonly string[];
  readonly #node: EtcdNode;
  readonly #workDir: string;
  readonly #startTimeoutMs: number;
  readonly #stopTimeoutMs: number;
  #removed = false;

  constructor(
    node: EtcdNode,
    workDir: string,
    startTimeoutMs: number,
    stopTimeoutMs = DEFAULT_STOP_TIMEOUT_MS,
  ) {
    this.#node = node;
    this.#workDir = workDir;
    this.#startTimeoutMs = startTimeoutMs;
    this.#stopTimeoutMs = stopTimeoutMs;
    this.endpoints = [node.endpoint];
  }

  get name(): string {
    return this.#node.name;
  }
  get endpoint(): string {
    return this.#node.endpoint;
  }
  get clientPort(): number {
    return this.#node.config.clientPort;
  }
  get peerPort(): number {
    return this.#node.config.peerPort;
  }
  get dataDir(): string {
    return this.#node.config.dataDir;
  }
  get version(): string {
    return this.#node.config.binary.version;
  }
  get binary(): string {
    return this.#node.config.binary.path;
  }
  get pid(): number | undefined {
    return this.#node.pid;
  }
  get running(): boolean {
    return this.#node.running;
  }

  async stop(): Promise<void> {
    await this.#node.terminate(this.#stopTimeoutMs);
    if (!this.#removed) {
      this.#removed = true;
      await removeTempDir(this.#workDir);
    }
  }

  kill(): Promise<void> {
    return this.#node.kill();
  }

  async restart(): Promise<void> {
    if (this.#removed) throw new Error(`etcd ${this.name} was stopped and its data removed`);
    await this.#node.terminate(this.#stopTimeoutMs);
    try {
      await this.#node.start(this.#startTimeoutMs);
    } catch (error) {
      await this.#node.kill();
      throw error;
    }
  }

  pause(): Promise<void> {
    return this.#node.pause();
  }

  resume(): void {
    this.#node.resume();
  }

  logs(): string {
    return this.#node.logs();
  }
}

/**
 * The binary at `path`, or the one {@link findEtcdBinary} finds (without `env`, the binary of the
 * suite's etcd version); throws with the reason if none.
 */
export function resolveEtcdBinary(path: string | undefined, env?: TestkitEnv): EtcdBinary {
  const lookup = path === undefined ? findEtcdBinary(env) : lookUpEtcdBinary(path, '');
  if (!lookup.found) throw new Error(`cannot start etcd: ${lookup.reason}`);
  return lookup.binary;
}
