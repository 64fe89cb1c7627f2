// Failover suites run twice: on the embedded server's simulated cluster (EmbeddedCluster) and on a
// real multi-member etcd cluster. Both are seen through one small interface, TestCluster: the
// operations failover tests need (kill, start, pause, resume a member; find the leader).
import {
  EmbeddedCluster,
  type EmbeddedClusterMember,
  type EmbeddedClusterOptions,
} from '@etcdkit/server-embedded';
import { afterAll, beforeAll, describe } from 'vitest';
import { describeRealEtcd } from './describe-each-backend.js';
import type { TestkitEnv } from './etcd-binary.js';
import {
  type EtcdCluster,
  type EtcdClusterMember,
  type MemberAddAnswer,
  startEtcdCluster,
} from './etcd-cluster.js';
import { delay } from './internal/http.js';

/** Where a {@link TestCluster} runs. */
export type ClusterBackendName = 'embedded' | 'etcd';

/** One member of a {@link TestCluster}. */
export interface TestClusterMember {
  /** `member0`, `member1`... */
  readonly name: string;
  /** Its client URL. */
  readonly endpoint: string;
  /** False after {@link kill}, until {@link start}. */
  readonly running: boolean;
  /** A crash: its port refuses connections, calls in flight fail. The cluster's data stays. */
  kill(): Promise<void>;
  /** Starts a killed member again on the same port. */
  start(): Promise<void>;
  /**
   * Freezes the member (SIGSTOP; on the embedded cluster a pause that also takes it out of the
   * cluster): connections stay open, nothing is answered, the others elect a new leader.
   */
  pause(): Promise<void>;
  /** Ends {@link pause}. */
  resume(): void;
}

/** A cluster of either backend, as failover tests use it. */
export interface TestCluster {
  readonly backend: ClusterBackendName;
  /** Client URLs of all members, in member order. */
  readonly endpoints: readonly string[];
  readonly members: readonly TestClusterMember[];
  /** The member a quorum agrees leads, waiting up to `timeoutMs` (default 30 000) for one. */
  waitForLeader(timeoutMs?: number): Promise<TestClusterMember>;
  /**
   * Starts the member a MemberAdd added, given its response (a voting member or a learner), named
   * `name` (default `memberN`); resolves once it serves. On a real cluster the added peer URL must
   * be `http://127.0.0.1:PORT` with a free PORT (the process listens there; see
   * {@link EtcdCluster.startAdded}). Not in {@link members}; stopped with the cluster.
   */
  startAdded(added: MemberAddAnswer, options?: { name?: string }): Promise<TestClusterMember>;
  /** Stops every member and discards the data. */
  stop(): Promise<void>;
}

/** What a suite body gets from {@link describeEachCluster}. */
export interface ClusterSuiteContext {
  readonly backend: ClusterBackendName;
  /** The started cluster; call it inside tests or hooks (it starts in `beforeAll`). */
  cluster(): TestCluster;
}

/** Options of {@link describeEachCluster}. */
export interface DescribeEachClusterOptions {
  /** Members per cluster. Default 3. */
  readonly members?: number;
  /** Options for the embedded cluster (members aside). */
  readonly embedded?: Omit<EmbeddedClusterOptions, 'members'>;
  /** Environment to read; default `process.env`. */
  readonly env?: TestkitEnv;
}

/**
 * Declares `body` twice: `"<title> [cluster: embedded]"` on an {@link EmbeddedCluster} (always
 * runs) and `"<title> [cluster: etcd] [backend: etcd]"` on a real etcd cluster (once per binary
 * ETCDKIT_ETCD_BINS lists). The real one is skipped by name without an etcd binary, fails with
 * ETCDKIT_REQUIRE_REAL_ETCD=1, and follows ETCDKIT_BACKENDS, as {@link describeRealEtcd} does.
 */
export function describeEachCluster(
  title: string,
  body: (context: ClusterSuiteContext) => void,
  options: DescribeEachClusterOptions = {},
): void {
  const members = options.members ?? 3;
  describe(`${title} [cluster: embedded]`, () => {
    clusterSuite('embedded', body, async () =>
      fromEmbedded(await EmbeddedCluster.start({ ...options.embedded, members })),
    );
  });
  describeRealEtcd(
    `${title} [cluster: etcd]`,
    ({ binary }) => {
      clusterSuite('etcd', body, async () => fromEtcd(await startEtcdCluster({ members, binary })));
    },
    { env: options.env },
  );
}

function clusterSuite(
  backend: ClusterBackendName,
  body: (context: ClusterSuiteContext) => void,
  start: () => Promise<TestCluster>,
): void {
  let started: TestCluster | undefined;
  beforeAll(async () => {
    started = await start();
  }, 90_000);
  afterAll(async () => {
    const cluster = started;
    started = undefined;
    await cluster?.stop();
  });
  body({
    backend,
    cluster() {
      if (started === undefined) {
        throw new Error(
          `the ${backend} cluster is not started: call cluster() inside a test or hook`,
        );
      }
      return started;
    },
  });
}

/** A real cluster's member as a TestClusterMember. */
function fromEtcdMember(member: EtcdClusterMember): TestClusterMember {
  return {
    name: member.name,
    endpoint: member.endpoint,
    get running() {
      return member.running;
    },
    kill: () => member.kill(),
    start: () => member.start(),
    pause: () => member.pause(),
    resume: () => member.resume(),
  };
}

/** A simulated cluster's member as a TestClusterMember. */
function fromEmbeddedMember(member: EmbeddedClusterMember): TestClusterMember {
  return {
    name: member.name,
    endpoint: member.endpoint,
    get running() {
      return member.running;
    },
    kill: () => member.stop(),
    start: () => member.start(),
    pause: async () => member.pause(),
    resume: () => member.resume(),
  };
}

/** A real cluster as a TestCluster. */
export function fromEtcd(cluster: EtcdCluster): TestCluster {
  const members = cluster.members.map(fromEtcdMember);
  return {
    backend: 'etcd',
    endpoints: cluster.endpoints,
    members,
    async waitForLeader(timeoutMs) {
      const leader = await cluster.waitForLeader(timeoutMs);
      return members[cluster.members.indexOf(leader)]!;
    },
    startAdded: async (added, options) => fromEtcdMember(await cluster.startAdded(added, options)),
    stop: () => cluster.stop(),
  };
}

/** A simulated cluster as a TestCluster. */
export function fromEmbedded(cluster: EmbeddedCluster): TestCluster {
  const members = cluster.members.map(fromEmbeddedMember);
  return {
    backend: 'embedded',
    endpoints: cluster.endpoints,
    members,
    async waitForLeader(timeoutMs = 30_000) {
      const deadline = Date.now() + timeoutMs;
      for (;;) {
        const leader = cluster.leader;
        if (leader !== undefined) return members[cluster.members.indexOf(leader)]!;
        if (Date.now() >= deadline) {
          throw new Error(`embedded cluster has no leader after ${timeoutMs} ms`);
        }
        await delay(20);
      }
    },
    async startAdded(added, options) {
      const id = added.member?.ID;
      if (id == null) throw new RangeError('the MemberAdd response names no member');
      return fromEmbeddedMember(await cluster.startAdded(id, options));
    },
    stop: () => cluster.stop(),
  };
}
