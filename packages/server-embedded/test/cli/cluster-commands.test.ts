// The commands of `etcdkit-server --simulated-members`, run on an EmbeddedCluster in this process:
// each answers one line, `ok` with the cluster's state after it or `error` with why.
import { etcdserverpb_Cluster as Cluster } from '@etcdkit/client/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import { clusterStatus, runClusterCommand } from '../../src/cli/cluster-commands.js';
import { EmbeddedCluster } from '../../src/index.js';
import { RawClient } from '../support/grpc-client.js';

describe('simulated cluster commands', () => {
  let cluster: EmbeddedCluster | undefined;
  afterEach(async () => {
    await cluster?.stop();
    cluster = undefined;
  });
  const start = async (members: number): Promise<EmbeddedCluster> => {
    cluster = await EmbeddedCluster.start({ members });
    return cluster;
  };

  it('status lists the leader, the term and every member', async () => {
    const started = await start(3);
    expect(await runClusterCommand(started, 'status')).toBe(
      'ok leader=member0 term=2 member0=leader member1=follower member2=follower',
    );
    expect(clusterStatus(started)).toBe(
      'leader=member0 term=2 member0=leader member1=follower member2=follower',
    );
  });

  it('pause takes a leader out of the cluster until resume; restart gives the leadership away', async () => {
    const started = await start(3);
    expect(await runClusterCommand(started, 'pause member0')).toBe(
      'ok leader=member1 term=3 member0=paused member1=leader member2=follower',
    );
    expect(started.member('member0')!.paused).toBe(true);
    expect(await runClusterCommand(started, 'resume member0')).toBe(
      'ok leader=member1 term=3 member0=follower member1=leader member2=follower',
    );
    expect(await runClusterCommand(started, 'restart member1')).toBe(
      'ok leader=member2 term=4 member0=follower member1=follower member2=leader',
    );
    expect(started.member('member1')!.running).toBe(true);
  });

  it('heal <member> heals that member only; a member both stopped and partitioned shows both', async () => {
    const started = await start(5);
    await runClusterCommand(started, 'partition member3');
    await runClusterCommand(started, 'partition member4');
    await runClusterCommand(started, 'stop member4');
    expect(await runClusterCommand(started, 'heal member3')).toBe(
      'ok leader=member0 term=2 member0=leader member1=follower member2=follower member3=follower member4=stopped+partitioned',
    );
    expect(await runClusterCommand(started, 'heal')).toBe(
      'ok leader=member0 term=2 member0=leader member1=follower member2=follower member3=follower member4=stopped',
    );
  });

  it('names a member by its id in hex, in either case', async () => {
    const started = await start(3);
    const id = started.members[2]!.memberId.toString(16).toUpperCase();
    expect(await runClusterCommand(started, `elect ${id}`)).toBe(
      'ok leader=member2 term=3 member0=follower member1=follower member2=leader',
    );
  });

  it('answers what cannot run with an error and changes nothing', async () => {
    const started = await start(3);
    await runClusterCommand(started, 'stop member1');
    await runClusterCommand(started, 'stop member2');
    expect(await runClusterCommand(started, 'elect member0')).toBe(
      'error member0 cannot lead: the cluster has no quorum',
    );
    expect(await runClusterCommand(started, 'heal member0 member1')).toBe(
      'error usage: heal [<member>]',
    );
    expect(await runClusterCommand(started, 'restart 123')).toBe(
      'error unknown member "123": member0, member1, member2, or a member id',
    );
    expect(await runClusterCommand(started, 'STOP member0')).toMatch(
      /^error unknown command "STOP"/,
    );
    expect(clusterStatus(started)).toBe(
      'leader=none term=2 member0=no-leader member1=stopped member2=stopped',
    );
  });

  it('join starts a voting member MemberAdd added; until then the status counts it as unstarted', async () => {
    const started = await start(1);
    const client = new RawClient(started.members[0]!.endpoint);
    try {
      const added = await client.unary(Cluster.MemberAdd, { peerURLs: ['http://127.0.0.1:1'] });
      const id = added.member!.ID!.toString(16);
      expect(await runClusterCommand(started, 'status')).toBe(
        'ok leader=none term=2 member0=no-leader unstarted=1',
      );
      const joined = await runClusterCommand(started, `join ${id}`);
      const member1 = started.member('member1')!;
      expect(joined).toBe(
        `ok member member1 ${id} ${member1.endpoint} leader=member0 term=3 member0=leader member1=follower`,
      );
      expect(await runClusterCommand(started, `join ${id}`)).toBe(
        `error member ${id} has already started`,
      );
      expect(await runClusterCommand(started, 'join member1')).toBe(
        'error usage: join <added-member-id> (the id in hex)',
      );
    } finally {
      client.close();
    }
  });

  it('join starts a learner too; the status names it a learner and counts no voting member unstarted', async () => {
    const started = await start(3);
    const client = new RawClient(started.members[0]!.endpoint);
    try {
      const added = await client.unary(Cluster.MemberAdd, {
        peerURLs: ['http://127.0.0.1:1'],
        isLearner: true,
      });
      const id = added.member!.ID!.toString(16);
      const joined = await runClusterCommand(started, `join ${id}`);
      const member3 = started.member('member3')!;
      expect(joined).toBe(
        `ok member member3 ${id} ${member3.endpoint} leader=member0 term=2 member0=leader member1=follower member2=follower member3=learner`,
      );
    } finally {
      client.close();
    }
  });
});
