// The servers a workload runs against, and the faults each can suffer.
import { type ChildProcess, spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { Etcd } from '@etcdkit/client';
import { type Clock, EmbeddedCluster, EmbeddedEtcd, VirtualClock } from '@etcdkit/server-embedded';
import { freePorts, launchEtcd } from './etcd-launcher.js';

/**
 * Names of faults: those a target may support (`pause`, `kill`, `partition`, `leader`,
 * `restart`, `lease-expiry`), and `client-pause`, which the lock workload does to its own
 * workers.
 */
export type FaultName =
  | 'pause'
  | 'kill'
  | 'partition'
  | 'leader'
  | 'restart'
  | 'lease-expiry'
  | 'client-pause';

/**
 * How far `lease-expiry` moves a virtual clock, in ms: past the TTL of every lease the workloads
 * grant, so each expires at once, whatever its last keep-alive.
 */
export const LEASE_EXPIRY_JUMP_MS = 60_000;

/** A fault that is on until its returned `heal` runs. */
export type FaultAction = () => Promise<() => Promise<void>>;

/** What a workload runs against. */
export interface Target {
  /** What it is, e.g. `etcd 3.4.23, 3 members`. */
  readonly description: string;
  /** Every member's client URL. */
  readonly endpoints: readonly string[];
  /** The faults it can suffer, each applied to a random member (the leader for `leader`). */
  readonly faults: Partial<Record<FaultName, FaultAction>>;
  /**
   * Moves the server's virtual clock {@link LEASE_EXPIRY_JUMP_MS} ahead: every lease expires now,
   * while its holders run on. Only embedded targets started with `virtualClock`.
   */
  readonly expireLeases?: () => Promise<void>;
  /** Stops what was started (nothing for external endpoints). */
  stop(): Promise<void>;
}

/** Where a workload runs; see {@link startTarget}. */
export type TargetSpec =
  | { readonly kind: 'endpoints'; readonly endpoints: readonly string[] }
  | {
      readonly kind: 'embedded';
      readonly members?: number;
      /**
       * Run the server on a virtual clock, for the `lease-expiry` fault: time stands still for
       * leases (they expire only when the fault moves the clock) and, on a cluster, for the
       * request timeout of calls held without a leader. Default false.
       */
      readonly virtualClock?: boolean;
    }
  | { readonly kind: 'etcd'; readonly binary?: string; readonly members?: number }
  | {
      /**
       * The etcdkit-server bin as a child process, in memory: kill -9 and a restart lose
       * everything it acknowledged. The server mode the checker must catch.
       */
      readonly kind: 'etcdkit-server';
    };

const pick = <T>(items: readonly T[]): T => items[Math.floor(Math.random() * items.length)]!;

/** Starts (or, for `endpoints`, connects to) a target. */
export async function startTarget(spec: TargetSpec): Promise<Target> {
  switch (spec.kind) {
    case 'endpoints':
      return {
        description: `endpoints ${spec.endpoints.join(',')}`,
        endpoints: spec.endpoints,
        faults: {},
        stop: async () => {},
      };
    case 'embedded':
      return (spec.members ?? 1) > 1
        ? embeddedCluster(spec.members ?? 3, spec.virtualClock ?? false)
        : embeddedSingle(spec.virtualClock ?? false);
    case 'etcd':
      return etcdProcesses(spec.members ?? 1, spec.binary);
    case 'etcdkit-server':
      return etcdkitServerProcess();
  }
}

/** The `lease-expiry` fault and {@link Target.expireLeases} of a server on a virtual clock. */
function leaseExpiry(
  clock: Clock | undefined,
): Pick<Target, 'expireLeases'> & { faults: Partial<Record<FaultName, FaultAction>> } {
  if (!(clock instanceof VirtualClock)) return { faults: {} };
  const expireLeases = () => clock.advance(LEASE_EXPIRY_JUMP_MS);
  return {
    expireLeases,
    faults: {
      'lease-expiry': async () => {
        await expireLeases();
        return async () => {};
      },
    },
  };
}

async function embeddedSingle(virtualClock: boolean): Promise<Target> {
  const server = await EmbeddedEtcd.start(virtualClock ? { clock: 'virtual' } : {});
  const expiry = leaseExpiry(server.clock);
  return {
    description: `embedded server ${server.version}, 1 member${virtualClock ? ', virtual clock' : ''}`,
    endpoints: server.endpoints,
    expireLeases: expiry.expireLeases,
    faults: {
      ...expiry.faults,
      pause: async () => {
        server.faults.pause();
        return async () => server.faults.resume();
      },
      // Its data stays, as after an etcd restart: acknowledged writes must survive.
      kill: async () => {
        await server.restart({ downtimeMs: 200 });
        return async () => {};
      },
      leader: async () => {
        server.faults.changeLeader();
        return async () => {};
      },
    },
    stop: () => server.stop(),
  };
}

async function embeddedCluster(members: number, virtualClock: boolean): Promise<Target> {
  const cluster = await EmbeddedCluster.start({
    members,
    requestTimeoutMs: 2_000,
    ...(virtualClock ? { clock: 'virtual' as const } : {}),
  });
  const expiry = leaseExpiry(cluster.clock);
  return {
    description: `embedded cluster ${cluster.version}, ${members} members${virtualClock ? ', virtual clock' : ''}`,
    endpoints: cluster.endpoints,
    expireLeases: expiry.expireLeases,
    faults: {
      ...expiry.faults,
      pause: async () => {
        const member = pick(cluster.members);
        member.pause();
        return async () => member.resume();
      },
      partition: async () => {
        const member = pick(cluster.members);
        member.partition();
        return async () => member.heal();
      },
      kill: async () => {
        const member = pick(cluster.members);
        await member.stop();
        return () => member.start();
      },
      leader: async () => {
        const others = cluster.members.filter((m) => !m.isLeader && m.running && m.reachable);
        if (others.length > 0) cluster.elect(pick(others));
        return async () => {};
      },
    },
    stop: () => cluster.stop(),
  };
}

/** Real etcd processes this tool starts (etcd-launcher.ts): one member, or a cluster. */
async function etcdProcesses(members: number, binary: string | undefined): Promise<Target> {
  const etcd = await launchEtcd({ members, binary });
  const single = members === 1;
  return {
    description: `etcd ${etcd.version}, ${members} member${single ? '' : 's'}`,
    endpoints: etcd.endpoints,
    faults: {
      pause: async () => {
        const member = pick(etcd.members);
        await member.pause();
        return async () => member.resume();
      },
      kill: async () => {
        const member = pick(etcd.members);
        await member.kill();
        return () => member.start();
      },
      restart: async () => {
        await pick(etcd.members).restart();
        return async () => {};
      },
      // Killing the leader forces an election; it comes back as a follower. A lone member would
      // only be killed and restarted: `kill` already does that.
      ...(single
        ? {}
        : {
            leader: async () => {
              const leader = await etcd.leader();
              await leader.kill();
              return () => leader.start();
            },
          }),
    },
    stop: () => etcd.stop(),
  };
}

/** The etcdkit-server entry point: its TypeScript source in this repository, else the built bin. */
function etcdkitServerCommand(): string[] {
  const source = fileURLToPath(new URL('../../server-embedded/src/cli/main.ts', import.meta.url));
  if (import.meta.url.endsWith('.ts') && existsSync(source)) {
    return ['--conditions=etcdkit-source', '--import', 'tsx', source];
  }
  const entry = createRequire(import.meta.url).resolve('@etcdkit/server-embedded');
  return [join(dirname(entry), 'cli.js')];
}

async function etcdkitServerProcess(): Promise<Target> {
  const [port] = await freePorts(1);
  const url = `http://127.0.0.1:${port}`;
  let child: ChildProcess | undefined;
  const launch = async () => {
    child = spawn(
      process.execPath,
      [
        ...etcdkitServerCommand(),
        '--listen-client-urls',
        url,
        '--advertise-client-urls',
        url,
        '--log-level',
        'error',
      ],
      { stdio: 'ignore' },
    );
    await waitUntilServing(url);
  };
  const kill9 = async () => {
    const running = child;
    if (running === undefined || running.exitCode !== null) return;
    const exited = new Promise((resolve) => running.once('exit', resolve));
    running.kill('SIGKILL');
    await exited;
  };
  await launch();
  return {
    description: 'etcdkit-server process, in memory',
    endpoints: [url],
    faults: {
      kill: async () => {
        await kill9();
        return launch;
      },
    },
    stop: kill9,
  };
}

// Generous: the server compiles its TypeScript through tsx at start, 15 s and more on a loaded
// 2-core machine; a run that gives up on it proves nothing.
async function waitUntilServing(url: string, timeoutMs = 90_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  const etcd = new Etcd({ endpoints: [url], callTimeoutMs: 1_000 });
  try {
    for (;;) {
      try {
        await etcd.get('etcdkit-verify/probe');
        return;
      } catch (error) {
        if (Date.now() > deadline) throw error;
        await new Promise((resolve) => setTimeout(resolve, 100));
      }
    }
  } finally {
    await etcd.close();
  }
}
