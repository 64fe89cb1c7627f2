import { type ChildProcess, spawn } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { readFile } from 'node:fs/promises';
import { Socket } from 'node:net';
import { EtcdStartError } from './errors.js';
import type { EtcdBinary } from './etcd-binary.js';
import { trackProcess, untrackProcess } from './internal/cleanup.js';
import { delay, type HttpTls, httpRequest } from './internal/http.js';
import { LogTail } from './internal/log-tail.js';
import { versionAtLeast } from './internal/version.js';

/** TLS for the client port (peers always talk plain HTTP on loopback). Paths to PEM files. */
export interface EtcdTlsOptions {
  /** Server certificate (`--cert-file`); must be valid for 127.0.0.1. */
  readonly certFile: string;
  /** Server private key (`--key-file`). */
  readonly keyFile: string;
  /**
   * CA that signs client certificates (`--trusted-ca-file`). etcd then requires a client
   * certificate from every client, whatever {@link clientCertAuth} says.
   */
  readonly trustedCaFile?: string;
  /** Require client certificates (`--client-cert-auth`); needs {@link trustedCaFile}. */
  readonly clientCertAuth?: boolean;
  /**
   * CA the testkit verifies the server certificate with when it probes readiness; default
   * {@link trustedCaFile}. Without either, probes do not verify the server.
   */
  readonly caFile?: string;
  /** Client certificate the testkit presents when it probes a server that requires one. */
  readonly clientCertFile?: string;
  /** Key of {@link clientCertFile}. */
  readonly clientKeyFile?: string;
}

/** Everything needed to run one etcd member. */
export interface EtcdNodeConfig {
  readonly binary: EtcdBinary;
  readonly name: string;
  /** `--data-dir`; etcd creates it (with the permissions it insists on). */
  readonly dataDir: string;
  /** Working directory of the process. */
  readonly workDir: string;
  readonly clientPort: number;
  readonly peerPort: number;
  /** `--initial-cluster`, e.g. `a=http://127.0.0.1:2380,b=...`. */
  readonly initialCluster: string;
  /**
   * `--initial-cluster-state`: `new` (default) for the members a cluster starts with, `existing`
   * for a member MemberAdd added to a running cluster.
   */
  readonly initialClusterState?: 'new' | 'existing';
  readonly clusterToken: string;
  readonly tls?: EtcdTlsOptions;
  /** Extra flags, appended last so they override the defaults. */
  readonly args: readonly string[];
  /**
   * Ready only once the member reports a cluster version (`/version`'s `etcdcluster` is no longer
   * `not_decided`). A new etcd sets it with a raft entry of its own soon after it can answer; a
   * test that compares raft indexes, or counts revisions of entries, must not race that entry.
   * Only for a member that can decide alone (a single member, or one whose quorum is up).
   */
  readonly waitForClusterVersion?: boolean;
}

type ExitStatus =
  | { readonly code: number | null; readonly signal: NodeJS.Signals | null }
  | { readonly error: Error };

/** How often readiness is polled, and the deadline of one probe. */
const POLL_INTERVAL_MS = 25;
const PROBE_TIMEOUT_MS = 1_000;
/** How many times in all a start that keeps losing the race for its ports is tried. */
const PORT_ATTEMPTS = 3;

/**
 * Runs `start` again while it loses the race for its ports, at most three times in all: ports are
 * found free, then released before etcd binds them, and another process may take one in between.
 * `start` finds new ports each time and cleans up after its own failure; `giveUp` says when a
 * retry is no longer wanted (the caller was stopped meanwhile).
 */
export async function retryPortRaces<T>(
  start: () => Promise<T>,
  giveUp: () => boolean = () => false,
): Promise<T> {
  for (let attempt = 1; ; attempt++) {
    try {
      return await start();
    } catch (error) {
      const lostRace = error instanceof EtcdStartError && error.addressInUse;
      if (!lostRace || attempt >= PORT_ATTEMPTS || giveUp()) throw error;
    }
  }
}

/**
 * One etcd process, startable again on the same ports and data dir. Owns no directories: the
 * callers decide when data is thrown away.
 */
export class EtcdNode {
  readonly endpoint: string;
  readonly peerUrl: string;
  readonly #log = new LogTail(60);
  #child: ChildProcess | undefined;
  #exited: Promise<ExitStatus> | undefined;
  #stopped = false;
  #probeTls: HttpTls | undefined;

  constructor(readonly config: EtcdNodeConfig) {
    const scheme = config.tls === undefined ? 'http' : 'https';
    this.endpoint = `${scheme}://127.0.0.1:${config.clientPort}`;
    this.peerUrl = `http://127.0.0.1:${config.peerPort}`;
  }

  get name(): string {
    return this.config.name;
  }

  /** Process id while the process runs. */
  get pid(): number | undefined {
    return this.#child?.pid;
  }

  /** Whether the process is alive (it may be paused). */
  get running(): boolean {
    return this.#child !== undefined;
  }

  /** Whether the process is stopped by SIGSTOP. */
  get paused(): boolean {
    return this.#stopped;
  }

  /** The last lines etcd printed. */
  logs(): string {
    return this.#log.toString();
  }

  /** Starts the process and waits until it serves client requests. */
  async start(timeoutMs: number): Promise<void> {
    this.spawn();
    await this.waitUntilReady(timeoutMs);
  }

  /** Starts the process without waiting; see {@link waitUntilReady}. */
  spawn(): void {
    if (this.#child !== undefined) throw new Error(`etcd ${this.name} is already running`);
    this.#log.note(`[etcdkit] starting ${this.name}: ${this.config.binary.path}`);
    const child = spawn(this.config.binary.path, this.#arguments(), {
      cwd: this.config.workDir,
      env: etcdEnvironment(),
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    child.stdout?.on('data', (chunk: Buffer) => this.#log.write(chunk));
    child.stderr?.on('data', (chunk: Buffer) => this.#log.write(chunk));
    // A forgotten server must not keep the test process alive; the exit safety net kills it.
    child.unref();
    for (const stream of [child.stdout, child.stderr]) {
      if (stream instanceof Socket) stream.unref();
    }
    const pid = child.pid;
    if (pid !== undefined) trackProcess(pid);
    this.#child = child;
    this.#stopped = false;
    this.#exited = new Promise<ExitStatus>((resolve) => {
      let settled = false;
      const settle = (status: ExitStatus) => {
        if (settled) return;
        settled = true;
        if (pid !== undefined) untrackProcess(pid);
        if (this.#child === child) {
          this.#child = undefined;
          this.#stopped = false;
        }
        this.#log.note(`[etcdkit] ${this.name} ${describeExit(status)}`);
        resolve(status);
      };
      child.once('exit', (code, signal) => settle({ code, signal }));
      child.once('error', (error) => settle({ error }));
    });
  }

  /**
   * Polls `GET /version` until it answers 200. etcd serves its client port only once the member
   * has joined the cluster (its ReadyNotify), so an answer means a leader exists and requests
   * will be served. `/health` is not used: it stays false while any alarm (NOSPACE) is raised.
   */
  async waitUntilReady(timeoutMs: number): Promise<void> {
    const exited = this.#exited;
    if (exited === undefined) throw new Error(`etcd ${this.name} was not started`);
    const deadline = Date.now() + timeoutMs;
    let lastProblem = 'no answer yet';
    const exitedMarker = exited.then((status) => ({ exited: status }));
    for (;;) {
      const remaining = deadline - Date.now();
      if (remaining <= 0) break;
      const outcome = await Promise.race([
        this.#probe(Math.min(PROBE_TIMEOUT_MS, remaining)),
        exitedMarker,
      ]);
      if (typeof outcome === 'object') {
        const status = outcome.exited;
        const code = 'error' in status ? 'ETCD_SPAWN_FAILED' : 'ETCD_EXITED';
        throw new EtcdStartError(
          code,
          `etcd ${this.name} ${describeExit(status)} before it became ready (${this.endpoint})`,
          this.logs(),
        );
      }
      if (outcome === true) return;
      lastProblem = outcome;
      await Promise.race([delay(POLL_INTERVAL_MS), exitedMarker]);
    }
    throw new EtcdStartError(
      'ETCD_START_TIMEOUT',
      `etcd ${this.name} did not become ready at ${this.endpoint} within ${timeoutMs} ms (last probe: ${lastProblem})`,
      this.logs(),
    );
  }

  /** SIGTERM, then SIGKILL after `graceMs`; resolves once the process is gone. */
  async terminate(graceMs: number): Promise<void> {
    const child = this.#child;
    const exited = this.#exited;
    if (child === undefined || exited === undefined) return;
    // Keep the event loop alive until the exit is observed (the child is unref'd while it runs).
    child.ref();
    child.kill('SIGTERM');
    // A stopped process only acts on SIGTERM once it runs again.
    if (this.#stopped) child.kill('SIGCONT');
    let timer: NodeJS.Timeout | undefined;
    const timedOut = await Promise.race([
      exited.then(() => false),
      new Promise<boolean>((resolve) => {
        timer = setTimeout(() => resolve(true), graceMs);
      }),
    ]);
    clearTimeout(timer);
    if (timedOut) {
      child.kill('SIGKILL');
      await exited;
    }
  }

  /** SIGKILL; resolves once the process is gone. Data stays. */
  async kill(): Promise<void> {
    const child = this.#child;
    const exited = this.#exited;
    if (child === undefined || exited === undefined) return;
    child.ref();
    child.kill('SIGKILL');
    await exited;
  }

  /**
   * SIGSTOP: the process keeps its sockets but answers nothing (a half-open peer). Resolves once
   * the kernel reports the process stopped: the signal lands asynchronously, and a loopback request
   * is fast enough to be answered in between.
   */
  async pause(): Promise<void> {
    const child = this.#requireRunning('pause');
    child.kill('SIGSTOP');
    this.#stopped = true;
    if (child.pid !== undefined) await untilStopped(child.pid);
  }

  /** SIGCONT after {@link pause}. */
  resume(): void {
    const child = this.#requireRunning('resume');
    child.kill('SIGCONT');
    this.#stopped = false;
  }

  /** TLS material for the testkit's own HTTP calls to this member. */
  httpTls(): HttpTls | undefined {
    const tls = this.config.tls;
    if (tls === undefined) return undefined;
    if (this.#probeTls === undefined) {
      const caFile = tls.caFile ?? tls.trustedCaFile;
      this.#probeTls = {
        ca: caFile === undefined ? undefined : readFileSync(caFile, 'utf8'),
        cert:
          tls.clientCertFile === undefined ? undefined : readFileSync(tls.clientCertFile, 'utf8'),
        key: tls.clientKeyFile === undefined ? undefined : readFileSync(tls.clientKeyFile, 'utf8'),
      };
    }
    return this.#probeTls;
  }

  async #probe(timeoutMs: number): Promise<true | string> {
    try {
      const response = await httpRequest(`${this.endpoint}/version`, {
        timeoutMs,
        tls: this.httpTls(),
      });
      if (response.status !== 200) return `HTTP ${response.status} ${response.body.trim()}`;
      if (this.config.waitForClusterVersion && response.body.includes('"not_decided"')) {
        return 'the cluster version is not decided yet';
      }
      return true;
    } catch (error) {
      return error instanceof Error ? error.message : String(error);
    }
  }

  #requireRunning(action: string): ChildProcess {
    if (this.#child === undefined)
      throw new Error(`cannot ${action} etcd ${this.name}: not running`);
    return this.#child;
  }

  #arguments(): string[] {
    const c = this.config;
    const args = [
      '--name',
      c.name,
      '--data-dir',
      c.dataDir,
      '--listen-client-urls',
      this.endpoint,
      '--advertise-client-urls',
      this.endpoint,
      '--listen-peer-urls',
      this.peerUrl,
      '--initial-advertise-peer-urls',
      this.peerUrl,
      '--initial-cluster',
      c.initialCluster,
      '--initial-cluster-state',
      c.initialClusterState ?? 'new',
      '--initial-cluster-token',
      c.clusterToken,
      '--log-level',
      'warn',
    ];
    // 3.4 defaults to the deprecated capnslog logger; 3.5+ only has zap and may drop the flag.
    if (!versionAtLeast(c.binary.version, '3.5.0')) args.push('--logger', 'zap');
    if (c.tls !== undefined) {
      args.push('--cert-file', c.tls.certFile, '--key-file', c.tls.keyFile);
      if (c.tls.trustedCaFile !== undefined) args.push('--trusted-ca-file', c.tls.trustedCaFile);
      if (c.tls.clientCertAuth === true) args.push('--client-cert-auth');
    }
    args.push(...c.args);
    return args;
  }
}

/**
 * The test process's environment without `ETCD_*` variables: etcd reads every flag from them
 * too, and a stray one from the developer's shell would silently change the server under test.
 */
function etcdEnvironment(): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {};
  for (const [key, value] of Object.entries(process.env)) {
    if (key.startsWith('ETCD_') && key !== 'ETCD_UNSUPPORTED_ARCH') continue;
    env[key] = value;
  }
  return env;
}

function describeExit(status: ExitStatus): string {
  if ('error' in status) return `could not be started: ${status.error.message}`;
  if (status.signal !== null) return `was killed by ${status.signal}`;
  return `exited with code ${status.code}`;
}

/** Polls /proc until the process is in the stopped state (or gone), for at most about a second. */
async function untilStopped(pid: number): Promise<void> {
  for (let i = 0; i < 200; i++) {
    let stat: string;
    try {
      stat = await readFile(`/proc/${pid}/stat`, 'utf8');
    } catch {
      return; // gone, or no /proc on this system
    }
    // The state is the first field after the parenthesised command name, which may hold spaces.
    const state = stat.charAt(stat.lastIndexOf(')') + 2);
    if (state === 'T' || state === 't') return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
