// Real etcd processes for the etcd targets: one member or a cluster on loopback, every member's
// data dir in one temp dir, and the faults the targets apply (kill -9, SIGSTOP, restarts).
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { randomBytes } from 'node:crypto';
import { rmSync } from 'node:fs';
import { mkdtemp, readFile, rm } from 'node:fs/promises';
import { request } from 'node:http';
import { type AddressInfo, createServer, Socket } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { TargetUnavailableError } from './errors.js';

/** Options of {@link launchEtcd}. */
export interface LaunchEtcdOptions {
  /** The etcd binary; default `ETCDKIT_ETCD_BIN`, else `etcd` on PATH. */
  readonly binary?: string;
  /** Members of the cluster. Default 1. */
  readonly members?: number;
  /** How long a start may take until every member serves (and a cluster has a leader), in ms. */
  readonly startTimeoutMs?: number;
}

/** One etcd process of a {@link LaunchedEtcd}, startable again on the same ports and data. */
export interface LaunchedMember {
  /** `member0`, `member1`, ... */
  readonly name: string;
  /** Client URL, `http://127.0.0.1:PORT`. */
  readonly endpoint: string;
  /** Process id while it runs. */
  readonly pid: number | undefined;
  /** Whether the process is alive (a paused one too). */
  readonly running: boolean;
  /** SIGKILL, a crash: its data stays for {@link start}. Resolves once the process is gone. */
  kill(): Promise<void>;
  /** Starts a killed member again and resolves once it serves. */
  start(): Promise<void>;
  /** SIGTERM (SIGKILL after 5 s), then {@link start}. */
  restart(): Promise<void>;
  /** SIGSTOP; resolves once the kernel reports the process stopped. */
  pause(): Promise<void>;
  /** SIGCONT after {@link pause}. */
  resume(): void;
  /** The last lines etcd printed. */
  logs(): string;
}

/** etcd processes started by {@link launchEtcd}. */
export interface LaunchedEtcd {
  /** `etcd --version`'s server version, e.g. `3.4.23`. */
  readonly version: string;
  /** Every member's client URL, in member order. */
  readonly endpoints: readonly string[];
  readonly members: readonly LaunchedMember[];
  /** The temp dir holding every member's data; removed by {@link stop}. */
  readonly dir: string;
  /** The member a quorum of members names leader, waiting for one up to `timeoutMs`. */
  leader(timeoutMs?: number): Promise<LaunchedMember>;
  /** Kills every member, waits until they are gone and removes the data. Idempotent. */
  stop(): Promise<void>;
}

const START_TIMEOUT_MS = 60_000;
const TERM_GRACE_MS = 5_000;
/** A lone member elects itself: short timeouts only make restarts fast (~100 ms, not ~1.5 s). */
const SINGLE_TIMING = ['--heartbeat-interval', '10', '--election-timeout', '100'];
/** A killed leader is replaced in about a second on loopback, far above fsync stalls. */
const CLUSTER_TIMING = ['--heartbeat-interval', '50', '--election-timeout', '500'];
/** Ports are free when found but released before etcd binds them: a start that lost one retries. */
const PORT_ATTEMPTS = 3;

/**
 * Starts real etcd on free loopback ports, each member with its data dir in a fresh temp dir, and
 * resolves once every member serves and a cluster agrees on a leader. Always {@link
 * LaunchedEtcd.stop} it; members still running when this process exits (or is ended by SIGINT,
 * SIGTERM or SIGHUP) are killed and their data removed. Throws {@link TargetUnavailableError} when the binary cannot run.
 */
export async function launchEtcd(options: LaunchEtcdOptions = {}): Promise<LaunchedEtcd> {
  const size = options.members ?? 1;
  if (!Number.isInteger(size) || size < 1)
    throw new RangeError(`members must be a positive integer, got ${size}`);
  const binary = options.binary ?? process.env.ETCDKIT_ETCD_BIN ?? 'etcd';
  const version = etcdVersion(binary);
  for (let attempt = 1; ; attempt++) {
    const cluster = new Cluster(
      binary,
      version,
      await mkdtemp(join(tmpdir(), 'etcdkit-verify-etcd-')),
      await freePorts(size * 2),
      options.startTimeoutMs ?? START_TIMEOUT_MS,
    );
    try {
      await cluster.startAll();
      return cluster;
    } catch (error) {
      await cluster.stop();
      if (!(error instanceof PortTaken) || attempt === PORT_ATTEMPTS) throw error;
    }
  }
}

/** The server version `binary --version` prints; TargetUnavailableError when it does not run. */
function etcdVersion(binary: string): string {
  const out = spawnSync(binary, ['--version'], { encoding: 'utf8', timeout: 10_000 });
  const version = /etcd Version:\s*v?(\S+)/.exec(`${out.stdout ?? ''}${out.stderr ?? ''}`)?.[1];
  if (out.error !== undefined || out.status !== 0 || version === undefined) {
    const why = out.error?.message ?? `exit ${out.status ?? out.signal}: ${out.stderr}`.trim();
    throw new TargetUnavailableError('etcd', `cannot run ${binary} --version (${why})`);
  }
  return version;
}

/** A member exited during its start because a port was taken since it was found free. */
class PortTaken extends Error {}

class Cluster implements LaunchedEtcd {
  readonly members: readonly Member[];
  readonly endpoints: readonly string[];
  #stopped = false;

  constructor(
    readonly binary: string,
    readonly version: string,
    readonly dir: string,
    ports: readonly number[],
    readonly startTimeoutMs: number,
  ) {
    const size = ports.length / 2;
    const names = Array.from({ length: size }, (_, i) => `member${i}`);
    const initialCluster = names
      .map((name, i) => `${name}=http://127.0.0.1:${ports[size + i]}`)
      .join(',');
    const token = `etcdkit-verify-${randomBytes(6).toString('hex')}`;
    const timing = size === 1 ? SINGLE_TIMING : CLUSTER_TIMING;
    this.members = names.map((name, i) => {
      const client = `http://127.0.0.1:${ports[i]}`;
      const peer = `http://127.0.0.1:${ports[size + i]}`;
      // etcd 3.4 logs through the deprecated capnslog unless told; 3.5 has only zap.
      const logger = /^3\.[0-4]\./.test(version) ? ['--logger', 'zap'] : [];
      const args = [
        ...['--name', name, '--data-dir', join(dir, name)],
        ...['--listen-client-urls', client, '--advertise-client-urls', client],
        ...['--listen-peer-urls', peer, '--initial-advertise-peer-urls', peer],
        ...['--initial-cluster', initialCluster, '--initial-cluster-token', token],
        ...['--initial-cluster-state', 'new', '--log-level', 'warn', ...logger, ...timing],
      ];
      return new Member(name, client, args, this);
    });
    this.endpoints = this.members.map((m) => m.endpoint);
    liveDirs.add(dir);
  }

  /** Spawns every member at once (none serves before a quorum has joined), waits for a leader. */
  async startAll(): Promise<void> {
    const deadline = Date.now() + this.startTimeoutMs;
    for (const member of this.members) member.spawn();
    await Promise.all(this.members.map((m) => m.untilServing(deadline)));
    await this.leader(Math.max(1, deadline - Date.now()));
  }

  async leader(timeoutMs = 30_000): Promise<LaunchedMember> {
    const deadline = Date.now() + timeoutMs;
    const quorum = Math.floor(this.members.length / 2) + 1;
    for (;;) {
      const statuses = await Promise.all(this.members.map((m) => m.status()));
      const byId = new Map<string, Member>();
      const votes = new Map<string, number>();
      statuses.forEach((status, i) => {
        if (status === undefined) return;
        byId.set(status.id, this.members[i]!);
        if (status.leader !== '0') votes.set(status.leader, (votes.get(status.leader) ?? 0) + 1);
      });
      for (const [id, count] of votes) {
        const leader = byId.get(id);
        if (leader !== undefined && count >= quorum) return leader;
      }
      if (Date.now() > deadline)
        throw new Error(`the etcd members agreed on no leader within ${timeoutMs} ms`);
      await sleep(50);
    }
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    await Promise.all(this.members.map((m) => m.kill()));
    await rm(this.dir, { recursive: true, force: true, maxRetries: 5, retryDelay: 50 });
    liveDirs.delete(this.dir);
  }

  assertNotStopped(): void {
    if (this.#stopped) throw new Error('the etcd processes were stopped and their data removed');
  }
}

class Member implements LaunchedMember {
  #child: ChildProcess | undefined;
  #exited: Promise<string> | undefined;
  #stopped = false;
  #tail: string[] = [];
  readonly #args: readonly string[];
  readonly #cluster: Cluster;

  constructor(
    readonly name: string,
    readonly endpoint: string,
    args: readonly string[],
    cluster: Cluster,
  ) {
    this.#args = args;
    this.#cluster = cluster;
  }

  get pid(): number | undefined {
    return this.#child?.pid;
  }

  get running(): boolean {
    return this.#child !== undefined;
  }

  logs(): string {
    return this.#tail.join('\n');
  }

  spawn(): void {
    this.#cluster.assertNotStopped();
    if (this.#child !== undefined) throw new Error(`etcd ${this.name} is already running`);
    // etcd reads every flag from ETCD_* variables too: a stray one would change the server.
    const env = Object.fromEntries(
      Object.entries(process.env).filter(([key]) => !key.startsWith('ETCD_')),
    );
    const child = spawn(this.#cluster.binary, this.#args, {
      cwd: this.#cluster.dir,
      env,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    child.stderr?.setEncoding('utf8');
    child.stderr?.on('data', (text: string) => {
      this.#tail = [...this.#tail, ...text.split('\n').filter((l) => l !== '')].slice(-40);
    });
    // A member must not keep this process alive: the exit handler kills what is left.
    child.unref();
    if (child.stderr instanceof Socket) child.stderr.unref();
    this.#child = child;
    this.#stopped = false;
    live.add(child);
    installExitHandlers();
    this.#exited = new Promise((resolve) => {
      const gone = (how: string) => {
        live.delete(child);
        if (this.#child === child) this.#child = undefined;
        resolve(how);
      };
      child.once('exit', (code, signal) => gone(signal ?? `exit code ${code}`));
      child.once('error', (error) => gone(error.message));
    });
  }

  /** Polls `GET /version` until it answers: etcd serves only once the member is in a cluster. */
  async untilServing(deadline: number): Promise<void> {
    const exited = this.#exited;
    if (exited === undefined) throw new Error(`etcd ${this.name} was not started`);
    let gone: string | undefined;
    void exited.then((how) => {
      gone = how;
    });
    for (;;) {
      const answer = await httpJson(`${this.endpoint}/version`, undefined, 1_000);
      if (gone !== undefined) {
        const logs = this.logs();
        if (logs.includes('address already in use')) throw new PortTaken(logs);
        throw new Error(`etcd ${this.name} ended (${gone}) before it served:\n${logs}`);
      }
      if (answer !== undefined) return;
      if (Date.now() > deadline)
        throw new Error(
          `etcd ${this.name} did not serve ${this.endpoint} in time:\n${this.logs()}`,
        );
      await sleep(50);
    }
  }

  /** Its member id and the leader it knows (`'0'`: none), or undefined when it does not answer. */
  async status(): Promise<{ id: string; leader: string } | undefined> {
    if (this.#child === undefined || this.#stopped) return undefined;
    const answer = (await httpJson(`${this.endpoint}/v3/maintenance/status`, '{}', 1_000)) as
      | { header?: { member_id?: string }; leader?: string }
      | undefined;
    const id = answer?.header?.member_id;
    return id === undefined ? undefined : { id, leader: answer?.leader ?? '0' };
  }

  async start(): Promise<void> {
    this.spawn();
    try {
      await this.untilServing(Date.now() + this.#cluster.startTimeoutMs);
    } catch (error) {
      await this.kill();
      throw error;
    }
  }

  async kill(): Promise<void> {
    await this.#signalAndWait('SIGKILL', 0);
  }

  async restart(): Promise<void> {
    await this.#signalAndWait('SIGTERM', TERM_GRACE_MS);
    await this.start();
  }

  /**
   * Sends `signal` (SIGCONT too when paused, or a SIGTERM waits forever) and waits for the exit,
   * SIGKILL after `graceMs`. Signals go through the ChildProcess, which stops sending them once
   * node has reaped the process: a pid the system has since reused is never signalled.
   */
  async #signalAndWait(signal: NodeJS.Signals, graceMs: number): Promise<void> {
    const child = this.#child;
    const exited = this.#exited;
    if (child === undefined || exited === undefined) return;
    child.ref(); // the exit must be seen before this resolves
    child.kill(signal);
    if (this.#stopped) child.kill('SIGCONT');
    if (signal !== 'SIGKILL') {
      let timer: NodeJS.Timeout | undefined;
      const late = new Promise<'late'>((resolve) => {
        timer = setTimeout(() => resolve('late'), graceMs);
      });
      if ((await Promise.race([exited, late])) === 'late') child.kill('SIGKILL');
      clearTimeout(timer);
    }
    await exited;
  }

  async pause(): Promise<void> {
    const child = this.#child;
    if (child === undefined) throw new Error(`cannot pause etcd ${this.name}: not running`);
    child.kill('SIGSTOP');
    this.#stopped = true;
    // The signal lands asynchronously; a loopback request could be answered in between.
    for (let i = 0; i < 200 && child.pid !== undefined; i++) {
      const stat = await readFile(`/proc/${child.pid}/stat`, 'utf8').catch(() => undefined);
      if (stat === undefined || 'tT'.includes(stat.charAt(stat.lastIndexOf(')') + 2))) return;
      await sleep(5);
    }
  }

  resume(): void {
    if (this.#child === undefined) throw new Error(`cannot resume etcd ${this.name}: not running`);
    this.#child.kill('SIGCONT');
    this.#stopped = false;
  }
}

/** Members alive in this process and data dirs not removed: cleaned if it exits or is signalled. */
const live = new Set<ChildProcess>();
const liveDirs = new Set<string>();
let handlersInstalled = false;

function installExitHandlers(): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  const killAll = () => {
    for (const child of live) child.kill('SIGKILL');
    for (const dir of liveDirs) {
      try {
        rmSync(dir, { recursive: true, force: true });
      } catch {
        // best effort on the way out: a member may still hold a file open
      }
    }
  };
  process.on('exit', killAll);
  for (const signal of ['SIGINT', 'SIGTERM', 'SIGHUP'] as const) {
    const onSignal = () => {
      killAll();
      // Without another listener, end as the signal would have: this one kept the process alive.
      if (process.listenerCount(signal) === 1) {
        process.off(signal, onSignal);
        process.kill(process.pid, signal);
      }
    };
    process.on(signal, onSignal);
  }
}

/**
 * GET (or POST `body`) on a fresh connection, the parsed JSON answer of a 200, else undefined. No
 * keep-alive: a pooled socket would outlive a killed or paused member and make the probe lie.
 */
function httpJson(url: string, body: string | undefined, timeoutMs: number): Promise<unknown> {
  return new Promise((resolve) => {
    const req = request(url, { method: body === undefined ? 'GET' : 'POST', agent: false });
    req.setTimeout(timeoutMs, () => req.destroy());
    req.on('error', () => resolve(undefined));
    req.on('response', (response) => {
      let text = '';
      response.setEncoding('utf8');
      response.on('data', (chunk: string) => {
        text += chunk;
      });
      response.on('error', () => resolve(undefined));
      response.on('end', () => {
        try {
          resolve(response.statusCode === 200 ? JSON.parse(text) : undefined);
        } catch {
          resolve(undefined);
        }
      });
    });
    req.end(body);
  });
}

/**
 * `count` distinct TCP ports of 127.0.0.1 that were free a moment ago: all are held until all are
 * found, so none is returned twice.
 */
export async function freePorts(count: number): Promise<number[]> {
  const servers = Array.from({ length: count }, () => createServer());
  try {
    return await Promise.all(
      servers.map(
        (server) =>
          new Promise<number>((resolve, reject) => {
            server.once('error', reject);
            server.listen(0, '127.0.0.1', () => resolve((server.address() as AddressInfo).port));
          }),
      ),
    );
  } finally {
    await Promise.all(
      servers.map((s) => new Promise((resolve) => (s.listening ? s.close(resolve) : resolve(0)))),
    );
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
