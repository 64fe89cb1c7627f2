import { randomBytes } from 'node:crypto';
import { rm } from 'node:fs/promises';
import { join } from 'node:path';
import type { TestkitEnv } from './etcd-binary.js';
import { EtcdNode, type EtcdNodeConfig, type EtcdTlsOptions, retryPortRaces } from './etcd-node.js';
import { resolveEtcdBinary } from './etcd-process.js';
import { EtcdHttpGateway, type MemberStatus } from './gateway.js';
import { delay } from './internal/http.js';
import { freePorts } from './internal/ports.js';
import { makeTempDir, removeTempDir } from './internal/temp-dir.js';

/** Options of {@link startEtcdCluster}. */
export interface StartEtcdClusterOptions {
  /** Number of members. Default 3. */
  readonly members?: number;
  /**
   * Extra etcd flags for every member, appended last. Members run with
   * `--heartbeat-interval 50 --election-timeout 500` (a killed leader is replaced in about a
   * second on loopback); override both or neither.
   */
  readonly args?: readonly string[];
  /** Serve every member's client port over TLS. */
  readonly tls?: EtcdTlsOptions;
  /** Path of the etcd binary; default as for `startEtcd` (the suite's etcd version, or the default one). */
  readonly binary?: string;
  /** How long to wait for the whole cluster to serve and agree on a leader, in ms. Default 60 000. */
  readonly startTimeoutMs?: number;
  /** How long a member's stop waits after SIGTERM before SIGKILL, in ms. Default 5 000. */
  readonly stopTimeoutMs?: number;
  /** Environment to look the binary up in; default `process.env`. */
  readonly env?: TestkitEnv;
}

/** Options of {@link EtcdClusterMember.start}. */
export interface MemberStartOptions {
  /**
   * Wait until the member serves requests. Default true. A member only serves once it is back in
   * a cluster with quorum, so pass false when restarting members of a cluster that lost quorum,
   * then call {@link EtcdCluster.waitForLeader}.
   */
  readonly waitUntilReady?: boolean;
}

/**
 * What {@link EtcdCluster.startAdded} needs of a MemberAdd response (`etcdserverpb.MemberAddResponse`
 * fits): the member added, with the peer URL it must listen on, and every member with its name.
 */
export interface MemberAddAnswer {
  readonly member?: {
    readonly ID?: bigint | null;
    readonly peerURLs?: readonly string[] | null;
  } | null;
  readonly members?:
    | readonly {
        readonly ID?: bigint | null;
        readonly name?: string | null;
        readonly peerURLs?: readonly string[] | null;
      }[]
    | null;
}

/** Options of {@link EtcdCluster.startAdded}. */
export interface StartAddedOptions extends MemberStartOptions {
  /** Its name (`--name`). Default `memberN`, N the number of members the cluster has had. */
  readonly name?: string;
}

/** One member of an {@link EtcdCluster}. */
export interface EtcdClusterMember {
  /** Member name, `member0`, `member1`, ... */
  readonly name: string;
  /** Client URL of this member. */
  readonly endpoint: string;
  readonly clientPort: number;
  /** Peer URL, `http://127.0.0.1:PORT`. */
  readonly peerUrl: string;
  /** This member's `--data-dir`; it survives {@link stop} and {@link kill}. */
  readonly dataDir: string;
  readonly pid: number | undefined;
  readonly running: boolean;
  /** SIGTERM (SIGKILL after the stop timeout). Data stays so {@link start} can bring it back. */
  stop(): Promise<void>;
  /** SIGKILL: a crash. Data stays. */
  kill(): Promise<void>;
  /** Starts a stopped or killed member again, same ports and data. */
  start(options?: MemberStartOptions): Promise<void>;
  /** {@link stop} then {@link start}. */
  restart(options?: MemberStartOptions): Promise<void>;
  /** SIGSTOP: the member holds its connections but answers nothing. */
  pause(): Promise<void>;
  /** SIGCONT after {@link pause}. */
  resume(): void;
  /** Last lines of this member's output. */
  logs(): string;
}

/** A real multi-member etcd cluster on loopback. */
export interface EtcdCluster {
  /** Client URLs of the members the cluster started with, in member order. */
  readonly endpoints: readonly string[];
  /** The members the cluster started with; {@link startAdded} returns those that join later. */
  readonly members: readonly EtcdClusterMember[];
  /** Server version from `etcd --version`. */
  readonly version: string;
  /**
   * The member that running members agree is leader, waiting (up to `timeoutMs`, default 30 000)
   * for a quorum of running members to name the same running member.
   */
  waitForLeader(timeoutMs?: number): Promise<EtcdClusterMember>;
  /**
   * Starts the member a MemberAdd added (`added` is its response: the added member's peer URL,
   * which must be `http://127.0.0.1:PORT` with a free PORT, and every member's name), as an
   * operator does: `--initial-cluster-state existing`, `--initial-cluster` listing every member's
   * `name=peerURL` with the new one under its name, its own data dir in the cluster's temp dir, a
   * free client port. Resolves once it serves (it has joined: a learner too), unless
   * `waitUntilReady` is false. Stopped and removed with the cluster; a start that fails leaves no
   * process.
   */
  startAdded(added: MemberAddAnswer, options?: StartAddedOptions): Promise<EtcdClusterMember>;
  /**
   * Kills every member (those started later too) and removes all data. Idempotent. No graceful shutdown: the data is
   * discarded, and a SIGTERMed leader whose peers are going away waits seconds trying to hand
   * over leadership.
   */
  stop(): Promise<void>;
}

const DEFAULT_START_TIMEOUT_MS = 60_000;
const DEFAULT_STOP_TIMEOUT_MS = 5_000;
/** Faster failover than etcd's 100/1000 ms, still far above loopback latency and fsync stalls. */
const CLUSTER_TIMING = ['--heartbeat-interval', '50', '--election-timeout', '500'];

/**
 * Starts a real etcd cluster (3 members by default), each member in its own data dir on its own
 * loopback ports, and resolves once every member serves and they agree on a leader.
 */
export async function startEtcdCluster(
  options: StartEtcdClusterOptions = {},
): Promise<EtcdCluster> {
  const size = options.members ?? 3;
  if (!Number.isInteger(size) || size < 1)
    throw new RangeError(`members must be >= 1, got ${size}`);
  const binary = resolveEtcdBinary(options.binary, options.env);
  const startTimeoutMs = options.startTimeoutMs ?? DEFAULT_START_TIMEOUT_MS;
  return retryPortRaces(async () => {
    const rootDir = await makeTempDir('etcdkit-cluster-');
    const ports = await freePorts(size * 2);
    const names = Array.from({ length: size }, (_, i) => `member${i}`);
    const initialCluster = names
      .map((name, i) => `${name}=http://127.0.0.1:${ports[size + i]}`)
      .join(',');
    const clusterToken = `etcdkit-${randomBytes(6).toString('hex')}`;
    const nodes = names.map(
      (name, i) =>
        new EtcdNode({
          binary,
          name,
          dataDir: join(rootDir, name),
          workDir: rootDir,
          clientPort: ports[i]!,
          peerPort: ports[size + i]!,
          initialCluster,
          clusterToken,
          tls: options.tls,
          args: [...CLUSTER_TIMING, ...(options.args ?? [])],
        }),
    );
    const cluster = new RunningCluster(
      nodes,
      rootDir,
      { binary, workDir: rootDir, clusterToken, tls: options.tls, args: nodes[0]!.config.args },
      startTimeoutMs,
      options.stopTimeoutMs ?? DEFAULT_STOP_TIMEOUT_MS,
    );
    try {
      // Members of a new cluster must start together: none serves before a quorum has joined.
      for (const node of nodes) node.spawn();
      const deadline = Date.now() + startTimeoutMs;
      await Promise.all(nodes.map((node) => node.waitUntilReady(startTimeoutMs)));
      await cluster.waitForLeader(Math.max(1, deadline - Date.now()));
      return cluster;
    } catch (error) {
      await Promise.all(nodes.map((node) => node.kill()));
      await removeTempDir(rootDir);
      throw error;
    }
  });
}

class ClusterMember implements EtcdClusterMember {
  readonly #node: EtcdNode;
  readonly #cluster: RunningCluster;

  constructor(node: EtcdNode, cluster: RunningCluster) {
    this.#node = node;
    this.#cluster = cluster;
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
  get peerUrl(): string {
    return this.#node.peerUrl;
  }
  get dataDir(): string {
    return this.#node.config.dataDir;
  }
  get pid(): number | undefined {
    return this.#node.pid;
  }
  get running(): boolean {
    return this.#node.running;
  }

  stop(): Promise<void> {
    return this.#node.terminate(this.#cluster.stopTimeoutMs);
  }

  kill(): Promise<void> {
    return this.#node.kill();
  }

  async start(options: MemberStartOptions = {}): Promise<void> {
    this.#cluster.assertNotStopped();
    this.#node.spawn();
    if (options.waitUntilReady === false) return;
    try {
      await this.#node.waitUntilReady(this.#cluster.startTimeoutMs);
    } catch (error) {
      await this.#node.kill();
      throw error;
    }
  }

  async restart(options?: MemberStartOptions): Promise<void> {
    await this.stop();
    await this.start(options);
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

  /** This member's status, or undefined when it does not answer. */
  async status(timeoutMs: number): Promise<MemberStatus | undefined> {
    if (!this.#node.running || this.#node.paused) return undefined;
    try {
      return await new EtcdHttpGateway(this.endpoint, this.#node.httpTls(), timeoutMs).status();
    } catch {
      return undefined;
    }
  }
}

/** What every member of a cluster is started with, those added later too. */
type NodeTemplate = Pick<EtcdNodeConfig, 'binary' | 'workDir' | 'clusterToken' | 'tls' | 'args'>;

class RunningCluster implements EtcdCluster {
  readonly members: readonly ClusterMember[];
  readonly endpoints: readonly string[];
  readonly version: string;
  /** Members started after MemberAdd. */
  readonly #joined: EtcdNode[] = [];
  #stopped = false;
  readonly #nodes: readonly EtcdNode[];
  readonly #rootDir: string;
  readonly #template: NodeTemplate;

  constructor(
    nodes: readonly EtcdNode[],
    rootDir: string,
    template: NodeTemplate,
    readonly startTimeoutMs: number,
    readonly stopTimeoutMs: number,
  ) {
    this.#nodes = nodes;
    this.#rootDir = rootDir;
    this.#template = template;
    this.members = nodes.map((node) => new ClusterMember(node, this));
    this.endpoints = nodes.map((node) => node.endpoint);
    this.version = template.binary.version;
  }

  async startAdded(
    added: MemberAddAnswer,
    options: StartAddedOptions = {},
  ): Promise<EtcdClusterMember> {
    this.assertNotStopped();
    const name = options.name ?? `member${this.#nodes.length + this.#joined.length}`;
    const { peerPort, initialCluster } = joinConfiguration(added, name);
    return retryPortRaces(
      async () => {
        const [clientPort] = await freePorts(1);
        this.assertNotStopped();
        const dataDir = join(this.#rootDir, name);
        const node = new EtcdNode({
          ...this.#template,
          name,
          dataDir,
          clientPort: clientPort!,
          peerPort,
          initialCluster,
          initialClusterState: 'existing',
        });
        const member = new ClusterMember(node, this);
        // Known to stop() before it spawns, so no process outlives the cluster.
        this.#joined.push(node);
        try {
          // Kills the process when it does not become ready.
          await member.start(options);
          return member;
        } catch (error) {
          this.#joined.splice(this.#joined.indexOf(node), 1);
          // A member that never joined keeps nothing worth having; a retry starts afresh.
          await rm(dataDir, { recursive: true, force: true });
          throw error;
        }
      },
      () => this.#stopped,
    );
  }

  async waitForLeader(timeoutMs = 30_000): Promise<EtcdClusterMember> {
    const deadline = Date.now() + timeoutMs;
    const quorum = Math.floor(this.members.length / 2) + 1;
    let seen = 'no member answered';
    for (;;) {
      const statuses = await Promise.all(this.members.map((member) => member.status(1_000)));
      const idToMember = new Map<string, ClusterMember>();
      const votes = new Map<string, number>();
      statuses.forEach((status, i) => {
        if (status === undefined) return;
        idToMember.set(status.memberId, this.members[i]!);
        if (status.leader !== '0') votes.set(status.leader, (votes.get(status.leader) ?? 0) + 1);
      });
      for (const [leaderId, count] of votes) {
        const leader = idToMember.get(leaderId);
        if (leader !== undefined && count >= quorum) return leader;
      }
      seen = statuses
        .map((status, i) =>
          status === undefined
            ? `${this.members[i]!.name}: no answer`
            : `${this.members[i]!.name}: leader ${status.leader}`,
        )
        .join(', ');
      if (Date.now() >= deadline) {
        throw new Error(`etcd cluster has no agreed leader after ${timeoutMs} ms (${seen})`);
      }
      await delay(50);
    }
  }

  async stop(): Promise<void> {
    if (this.#stopped) return;
    this.#stopped = true;
    await Promise.all([...this.#nodes, ...this.#joined].map((node) => node.kill()));
    await removeTempDir(this.#rootDir);
  }

  assertNotStopped(): void {
    if (this.#stopped) throw new Error('the etcd cluster was stopped and its data removed');
  }
}

/**
 * The new member's peer port and `--initial-cluster`, from a MemberAdd response: every member's
 * `name=peerURL`, the new member under `name` (as `etcdctl member add` prints it).
 */
function joinConfiguration(
  added: MemberAddAnswer,
  name: string,
): { peerPort: number; initialCluster: string } {
  const id = added.member?.ID;
  const peerUrl = added.member?.peerURLs?.[0];
  const port = /^http:\/\/127\.0\.0\.1:(\d+)$/.exec(peerUrl ?? '')?.[1];
  if (id == null || port === undefined || added.member?.peerURLs?.length !== 1) {
    throw new RangeError(
      `the member added must have one peer URL http://127.0.0.1:PORT, got ${JSON.stringify(
        added.member?.peerURLs ?? [],
      )}`,
    );
  }
  const members = added.members ?? [];
  if (!members.some((member) => member.ID === id)) {
    throw new RangeError('the MemberAdd response does not list the member added');
  }
  const initialCluster = members
    .flatMap((member) =>
      (member.peerURLs ?? []).map(
        (url) => `${member.ID === id ? name : (member.name ?? '')}=${url}`,
      ),
    )
    .join(',');
  return { peerPort: Number(port), initialCluster };
}
