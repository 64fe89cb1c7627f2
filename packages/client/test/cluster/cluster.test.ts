// ClusterClient against a real single-member etcd and a real 3-member cluster.
import { createServer } from 'node:net';
import {
  describeRealEtcd,
  type EtcdCluster,
  type EtcdProcess,
  startEtcd,
  startEtcdCluster,
} from '@etcdkit/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { ClusterClient, type Member } from '../../src/cluster/cluster.js';
import { MaintenanceClient } from '../../src/cluster/maintenance.js';
import { Connection } from '../../src/connection/connection.js';
import {
  EtcdError,
  LearnerNotReadyError,
  MemberNotFoundError,
  MemberNotLearnerError,
  PeerUrlExistsError,
  type ServerErrorClass,
} from '../../src/errors.js';

/**
 * Matches an etcd error by its stable code and exact message. (`toBeInstanceOf` would be the natural
 * check, but errors.ts registers the anonymous base class of each error, not the exported one.)
 */
const etcdError = (kind: ServerErrorClass) =>
  expect.objectContaining({ code: kind.errorCode, message: kind.etcdMessage });

describeRealEtcd('ClusterClient on a single member', () => {
  let etcd: EtcdProcess;
  let connection: Connection;

  beforeAll(async () => {
    etcd = await startEtcd({ name: 'solo' });
    connection = new Connection({ endpoints: etcd.endpoints });
  });

  afterAll(async () => {
    await connection?.close();
    await etcd?.stop();
  });

  it('lists the one member with its URLs and a header without revision', async () => {
    const status = await new MaintenanceClient(connection).status();
    const list = await new ClusterClient(connection).memberList();
    expect(list.members).toEqual([
      {
        id: status.memberId,
        name: 'solo',
        peerUrls: [`http://127.0.0.1:${etcd.peerPort}`],
        clientUrls: [etcd.endpoint],
        isLearner: false,
      },
    ]);
    expect(list.header).toEqual({
      clusterId: status.header.clusterId,
      memberId: status.memberId,
      revision: 0n,
      raftTerm: status.raftTerm,
    });
  });

  it('gives the same list when asked for a linearizable one', async () => {
    const cluster = new ClusterClient(connection);
    const linearizable = await cluster.memberList({ linearizable: true });
    expect(linearizable.members).toEqual((await cluster.memberList()).members);
  });
});

describeRealEtcd('ClusterClient on a 3-member cluster', () => {
  let etcd: EtcdCluster;
  let connection: Connection;
  let cluster: ClusterClient;

  beforeAll(async () => {
    etcd = await startEtcdCluster({ members: 3 });
    connection = new Connection({ endpoints: etcd.endpoints });
    cluster = new ClusterClient(connection);
  });

  afterAll(async () => {
    await connection?.close();
    await etcd?.stop();
  });

  const byName = (members: readonly Member[]) =>
    [...members].sort((a, b) => a.name.localeCompare(b.name));

  it('lists the three voting members', async () => {
    const { members } = await cluster.memberList();
    expect(byName(members)).toEqual(
      etcd.members.map((member) => ({
        id: expect.any(BigInt),
        name: member.name,
        peerUrls: [member.peerUrl],
        clientUrls: [member.endpoint],
        isLearner: false,
      })),
    );
    expect(new Set(members.map((m) => m.id)).size).toBe(3);
  });

  it('adds a learner that cannot be promoted before it catches up, then removes it', async () => {
    const peerUrl = `http://127.0.0.1:${await unusedLoopbackPort()}`;

    const added = await whenHealthy(() => cluster.memberAdd([peerUrl], { isLearner: true }));
    expect(added.member).toEqual({
      id: expect.any(BigInt),
      name: '',
      peerUrls: [peerUrl],
      clientUrls: [],
      isLearner: true,
    });
    expect(added.members).toHaveLength(4);
    expect(added.members).toContainEqual(added.member);

    // The learner was never started, so its log is empty: far behind the leader's.
    await expect(cluster.memberPromote(added.member.id)).rejects.toEqual(
      etcdError(LearnerNotReadyError),
    );

    const removed = await cluster.memberRemove(added.member.id);
    expect(removed.members.map((m) => m.id)).not.toContain(added.member.id);
    expect(byName(removed.members).map((m) => m.name)).toEqual(['member0', 'member1', 'member2']);
    await expect(cluster.memberRemove(added.member.id)).rejects.toEqual(
      etcdError(MemberNotFoundError),
    );
  });

  it('refuses to promote a voting member with MemberNotLearnerError', async () => {
    const { members } = await cluster.memberList();
    await expect(cluster.memberPromote(members[0]!.id)).rejects.toEqual(
      etcdError(MemberNotLearnerError),
    );
  });

  it('updates a member to its own peer URL and refuses another member’s', async () => {
    const { members } = await cluster.memberList();
    const [first, second] = byName(members) as [Member, Member];

    const updated = await cluster.memberUpdate(first.id, first.peerUrls);
    expect(byName(updated.members)).toEqual(byName(members));

    await expect(cluster.memberUpdate(first.id, second.peerUrls)).rejects.toEqual(
      etcdError(PeerUrlExistsError),
    );
  });
});

/**
 * Runs a membership change, retrying while etcd answers "unhealthy cluster": with the strict
 * reconfiguration check (the default), members refuse changes until every voting member has been
 * connected for 5 s, as in a freshly started cluster. That refusal happens before anything is
 * proposed, so retrying cannot apply the change twice, though the connection still reports it as
 * an OutcomeUnknownError (a write that got Unavailable).
 */
async function whenHealthy<T>(change: () => Promise<T>): Promise<T> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    try {
      return await change();
    } catch (error) {
      const unhealthy = [error, (error as Error).cause].some(
        (e) => e instanceof EtcdError && e.code === 'UNHEALTHY',
      );
      if (!unhealthy || Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 250));
    }
  }
}

/** A loopback port nothing listens on (briefly bound, then released). */
function unusedLoopbackPort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      server.close(() =>
        typeof address === 'object' && address
          ? resolve(address.port)
          : reject(new Error('no port')),
      );
    });
  });
}
