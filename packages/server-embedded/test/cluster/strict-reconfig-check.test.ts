// etcd 3.4's strict reconfiguration check (server.go mayAddMember / mayRemoveMember, cluster.go
// IsReadyToAddVotingMember / IsReadyToRemoveVotingMember) as Membership makes it for a simulated
// cluster, on a made-up view of who is connected to whom: every case of the rules, with counts.
import { describe, expect, it } from 'vitest';
import type { MemberIdentity } from '../../src/consensus/member-identity.js';
import { Membership } from '../../src/consensus/membership.js';
import { ProposalLog } from '../../src/consensus/proposals.js';
import { EtcdServerError } from '../../src/index.js';

const NOT_ENOUGH_STARTED = new EtcdServerError('MEMBER_NOT_ENOUGH_STARTED');
const UNHEALTHY = new EtcdServerError('UNHEALTHY');

const identity = (memberId: bigint): MemberIdentity => ({
  clusterId: 1n,
  memberId,
  name: `m${memberId}`,
  peerUrls: [`http://127.0.0.1:${2380 + Number(memberId)}`],
  clientUrls: [`http://127.0.0.1:${2379 + Number(memberId)}`],
});

/**
 * A cluster of `started` started voting members (ids 1...), whose members reach each other
 * unless listed in `down`. The wall clock moves a second per add, so every add gets a new id.
 */
function clusterOf(started: number, down: bigint[] = []) {
  let now = 1_700_000_000_000;
  const proposals = new ProposalLog({ memberId: 1n, maxRequestBytes: 1 << 20 });
  const members = new Membership(identity(1n), proposals, () => (now += 1000));
  for (let id = 2n; id <= BigInt(started); id++) members.addStarted(identity(id));
  const unreachable = new Set(down);
  members.allowVotingChanges({
    connected: (local, peer) => {
      const started = (members.get(peer)?.name ?? '') !== '';
      return started && !unreachable.has(local) && !unreachable.has(peer);
    },
  });
  let port = 1;
  const add = (isLearner = false, local = 1n) =>
    members.add([`http://10.0.0.1:${port++}`], isLearner, local).id;
  return { members, add, unreachable };
}

describe('strict reconfiguration check: MemberAdd', () => {
  it('a second member added to a single one passes (etcd restoring a cluster); a third does not', () => {
    const { members, add } = clusterOf(1);
    add();
    // 1 started of 3 < quorum 2. The check comes first: the unstarted member never connects.
    expect(() => add()).toThrow(NOT_ENOUGH_STARTED);
    expect(members.list()).toHaveLength(2);
  });

  it('3 started: one added passes (3 of 4); the next is unhealthy (3 of 5 is enough, but the new one is not connected)', () => {
    const { members, add } = clusterOf(3);
    add();
    expect(() => add()).toThrow(UNHEALTHY);
    expect(() => add(true)).toThrow(UNHEALTHY);
    expect(members.list().filter((m) => m.name === '')).toHaveLength(1);
  });

  it('2 started plus 1 unstarted: a fourth voting member is not enough started (2 of 4 < 3)', () => {
    const { members, add } = clusterOf(2);
    // 2 started of 3 is a quorum: this add passes.
    add();
    expect(members.list()).toHaveLength(3);
    expect(() => add()).toThrow(NOT_ENOUGH_STARTED);
    // A learner skips the count, not the connections.
    expect(() => add(true)).toThrow(UNHEALTHY);
  });

  it('a member down (stopped, still started) makes every add unhealthy, asked of any member', () => {
    const { add } = clusterOf(3, [3n]);
    expect(() => add(false, 1n)).toThrow(UNHEALTHY);
    expect(() => add(true, 2n)).toThrow(UNHEALTHY);
    // Asked of the member down itself: it is connected to nobody.
    expect(() => add(true, 3n)).toThrow(UNHEALTHY);
  });
});

describe('strict reconfiguration check: MemberRemove', () => {
  it('3 started, all connected: any one may go, the one asked included', () => {
    for (const [id, local] of [
      [2n, 1n],
      [1n, 1n],
      [3n, 2n],
    ] as const) {
      const { members } = clusterOf(3);
      members.remove(id, local);
      expect(members.list().map((m) => m.id)).not.toContain(id);
    }
  });

  it('3 started, one down: a connected member may not go (1 left connected < 2); the one down may', () => {
    const { members } = clusterOf(3, [3n]);
    expect(() => members.remove(2n, 1n)).toThrow(UNHEALTHY);
    expect(() => members.remove(1n, 1n)).toThrow(UNHEALTHY);
    members.remove(3n, 1n);
    expect(members.list().map((m) => m.id)).toEqual([1n, 2n]);
  });

  it('the only started member with an unstarted one: it may not go; the unstarted one may', () => {
    const { members, add } = clusterOf(1);
    const unstarted = add();
    expect(() => members.remove(1n, 1n)).toThrow(NOT_ENOUGH_STARTED);
    members.remove(unstarted, 1n);
    expect(members.list().map((m) => m.id)).toEqual([1n]);
  });

  it('5 started, 2 down: a connected member may not go (2 left connected < 3); one down may', () => {
    const { members } = clusterOf(5, [4n, 5n]);
    // Connected: 1, 2 and 3. Removing 2 leaves 1 and 3, short of the quorum of the 4 left (3).
    expect(() => members.remove(2n, 1n)).toThrow(UNHEALTHY);
    members.remove(5n, 1n);
    expect(members.list().map((m) => m.id)).toEqual([1n, 2n, 3n, 4n]);
  });

  it('an unknown id passes the check and is then not found; a learner is not checked', () => {
    const { members, add, unreachable } = clusterOf(3);
    const learner = add(true);
    unreachable.add(3n);
    expect(() => members.remove(99n, 1n)).toThrow(new EtcdServerError('MEMBER_NOT_FOUND'));
    // With member 3 down a connected voting member may not go, but the learner may.
    expect(() => members.remove(2n, 1n)).toThrow(UNHEALTHY);
    members.remove(learner, 1n);
    expect(members.list().map((m) => m.id)).toEqual([1n, 2n, 3n]);
  });
});

describe('MemberPromote: in sync, then the strict check (IsReadyToPromoteMember)', () => {
  const LEARNER_NOT_READY = new EtcdServerError('LEARNER_NOT_READY');
  const member = (id: bigint, started: boolean, isLearner = false) => ({
    id,
    name: started ? `m${id}` : '',
    peerUrls: [`http://127.0.0.1:${2380 + Number(id)}`],
    clientUrls: started ? [`http://127.0.0.1:${2379 + Number(id)}`] : [],
    isLearner,
  });
  /** Members 1 (started) and the given others, with learner 9 in sync when `inSync` says so. */
  const withLearner = (others: ReturnType<typeof member>[], inSync: boolean) => {
    const proposals = new ProposalLog({ memberId: 1n, maxRequestBytes: 1 << 20 });
    const members = new Membership(identity(1n), proposals);
    members.restore({
      members: [member(1n, true), ...others, member(9n, true, true)],
      removed: [],
    });
    members.allowVotingChanges({ connected: () => true, inSync: () => inSync });
    return members;
  };

  it('a learner not in sync is not ready, whatever else holds', () => {
    const members = withLearner([member(2n, true)], false);
    expect(() => members.promote(9n)).toThrow(LEARNER_NOT_READY);
  });

  it('in sync: the learner counts as started; 1 started and 2 unstarted voting members are not enough (2 of 4 < 3)', () => {
    const members = withLearner([member(2n, false), member(3n, false)], true);
    expect(() => members.promote(9n)).toThrow(NOT_ENOUGH_STARTED);
    expect(members.get(9n)?.isLearner).toBe(true);
  });

  it('in sync with 2 started and 1 unstarted voting members: promoted (3 of 4), a voting member after', () => {
    const members = withLearner([member(2n, true), member(3n, false)], true);
    members.promote(9n);
    expect(members.get(9n)?.isLearner).toBe(false);
    expect(() => members.promote(9n)).toThrow(new EtcdServerError('MEMBER_NOT_LEARNER'));
  });
});
