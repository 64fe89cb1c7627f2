// ClusterCore: what the single server and the simulated cluster share. An election is a new term
// in which every lease gets its full TTL again; a bare term change (the single server's
// changeLeader fault) leaves the leases alone; the leader's timers run once, on the core's clock.
import { describe, expect, it } from 'vitest';
import { etcdVersionTraits } from '../../src/etcd-version.js';
import { createLogger } from '../../src/logger.js';
import { ClusterCore } from '../../src/member/cluster-core.js';
import { VirtualClock } from '../../src/virtual-clock.js';

function newCluster(): { cluster: ClusterCore; clock: VirtualClock } {
  const clock = new VirtualClock();
  const cluster = new ClusterCore({
    member: {
      clusterId: 1n,
      memberId: 2n,
      name: 'default',
      peerUrls: ['http://localhost:2380'],
      clientUrls: [],
    },
    maxRequestBytes: 1.5 * 1024 * 1024,
    clientCertAuth: false,
    clock,
    traits: etcdVersionTraits('3.7'),
    logger: createLogger('silent'),
  });
  return { cluster, clock };
}

/** Grants a lease of `ttl` seconds; returns its id. */
function grant(cluster: ClusterCore, ttl: number): bigint {
  return cluster.core.services.leases.grant({ ID: 0n, TTL: BigInt(ttl) }, 4).ID ?? 0n;
}

describe('ClusterCore', () => {
  it('electLeader raises the term and gives every lease its full TTL again; nextTerm only raises the term', () => {
    const { cluster, clock } = newCluster();
    const id = grant(cluster, 10);
    const lease = cluster.core.leaseTable.get(id)!;
    expect(lease.expiresAt).toBe(10_000);
    const term = cluster.core.proposals.term;
    clock.advance(4_000);
    expect(cluster.nextTerm()).toBe(term + 1);
    expect(lease.expiresAt).toBe(10_000);
    expect(cluster.electLeader()).toBe(term + 2);
    expect(lease.expiresAt).toBe(14_000);
  });

  it('elections go through the recorder given, once given', () => {
    const { cluster } = newCluster();
    const recorded: number[] = [];
    cluster.recordTermsWith(() => {
      recorded.push(cluster.core.proposals.electLeader());
      return recorded.at(-1)!;
    });
    cluster.nextTerm();
    cluster.electLeader();
    expect(recorded).toEqual([cluster.core.proposals.term - 1, cluster.core.proposals.term]);
  });

  it("runs the leader's lease expiry once however often started, and not once stopped", () => {
    const { cluster, clock } = newCluster();
    const id = grant(cluster, 2);
    cluster.startLeaderWork();
    cluster.startLeaderWork();
    cluster.stopLeaderWork();
    clock.advance(5_000);
    expect(cluster.core.leaseTable.get(id)).toBeDefined();
    cluster.startLeaderWork();
    clock.advance(1_000);
    expect(cluster.core.leaseTable.get(id)).toBeUndefined();
    cluster.stopLeaderWork();
  });
});
