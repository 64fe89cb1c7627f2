// The Cluster member calls on a single member, on the embedded server or a real etcd: what a lone
// etcd allows (a learner that never starts, peer URL updates, removing the learner) and what it
// refuses, with etcd's codes and messages.
import {
  etcdserverpb_Cluster as Cluster,
  etcdserverpb_Maintenance as Maintenance,
} from '@etcdkit/client/protocol';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { status } from '../support/grpc-client.js';
import {
  specBackend,
  startTestServer,
  type TestServer,
  versionAtLeast,
} from '../support/test-server.js';

const UNKNOWN = 2;
const INVALID_ARGUMENT = 3;
const NOT_FOUND = 5;
const FAILED_PRECONDITION = 9;
const UNIMPLEMENTED = 12;
const memberNotFound = status(NOT_FOUND, 'etcdserver: member not found');
const peerUrlsExist = status(FAILED_PRECONDITION, 'etcdserver: Peer URLs already exists');
const badUrls = status(INVALID_ARGUMENT, 'etcdserver: given member URLs are invalid');

describe(`Cluster [${specBackend}]`, () => {
  let server: TestServer;
  let self: bigint;
  let selfPeerUrls: string[];

  beforeEach(async () => {
    server = await startTestServer();
    const list = await server.client.unary(Cluster.MemberList, {});
    self = list.members[0]?.ID ?? 0n;
    selfPeerUrls = list.members[0]?.peerURLs ?? [];
  });
  afterEach(() => server.stop());

  const addLearner = (...peerURLs: string[]) =>
    server.client.unary(Cluster.MemberAdd, { peerURLs, isLearner: true });

  it('adds a learner that never starts, listed by id, with a header without revision', async () => {
    const added = await addLearner('http://127.0.0.1:40002', 'http://127.0.0.1:40001');
    const learner = added.member;
    expect(learner).toMatchObject({
      peerURLs: ['http://127.0.0.1:40001', 'http://127.0.0.1:40002'],
      isLearner: true,
    });
    expect(learner?.ID).not.toBe(0n);
    expect(added.header).toMatchObject({ memberId: self, raftTerm: 2n });
    expect(added.header?.revision ?? 0n).toBe(0n);
    const expected = [
      { ID: self, name: server.embedded ? 'default' : expect.any(String), isLearner: false },
      { ID: learner?.ID, name: '', clientURLs: [], isLearner: true },
    ].sort((a, b) => ((a.ID ?? 0n) < (b.ID ?? 0n) ? -1 : 1));
    expect(added.members).toMatchObject(expected);
    expect((await server.client.unary(Cluster.MemberList, {})).members).toMatchObject(expected);
  });

  it('refuses a second learner, taken peer URLs and malformed ones', async () => {
    await addLearner('http://127.0.0.1:40001');
    // (Not the very same URL list: within the same second etcd derives the same member id from
    // it and answers "member ID already exist" first.)
    await expect(
      addLearner('http://127.0.0.1:40001', 'http://127.0.0.1:40005'),
    ).rejects.toMatchObject(peerUrlsExist);
    await expect(addLearner(...selfPeerUrls)).rejects.toMatchObject(peerUrlsExist);
    await expect(addLearner('http://127.0.0.1:40003')).rejects.toMatchObject(
      status(FAILED_PRECONDITION, 'etcdserver: too many learner members in cluster'),
    );
    for (const urls of [
      [],
      ['::bad'],
      ['http://127.0.0.1'],
      ['http://127.0.0.1:1/path'],
      ['ftp://a:1'],
    ]) {
      await expect(
        server.client.unary(Cluster.MemberAdd, { peerURLs: urls, isLearner: true }),
      ).rejects.toMatchObject(badUrls);
    }
  });

  it('cannot promote the learner (never in sync), nor a voting member, nor an unknown id', async () => {
    const learner = (await addLearner('http://127.0.0.1:40001')).member?.ID ?? 0n;
    await expect(server.client.unary(Cluster.MemberPromote, { ID: learner })).rejects.toMatchObject(
      status(
        FAILED_PRECONDITION,
        'etcdserver: can only promote a learner member which is in sync with leader',
      ),
    );
    await expect(server.client.unary(Cluster.MemberPromote, { ID: self })).rejects.toMatchObject(
      status(FAILED_PRECONDITION, 'etcdserver: can only promote a learner member'),
    );
    await expect(server.client.unary(Cluster.MemberPromote, { ID: 42n })).rejects.toMatchObject(
      memberNotFound,
    );
  });

  it('updates peer URLs, keeping a learner a learner, and refuses taken URLs and unknown ids', async () => {
    const learner = (await addLearner('http://127.0.0.1:40001')).member?.ID ?? 0n;
    const updated = await server.client.unary(Cluster.MemberUpdate, {
      ID: learner,
      peerURLs: ['http://127.0.0.1:40009'],
    });
    const entry = updated.members.find((m) => m.ID === learner);
    expect(entry?.peerURLs).toEqual(['http://127.0.0.1:40009']);
    // etcd 3.4 turned an updated learner into a voting member (fixed in 3.5).
    if (versionAtLeast(server.version, 3, 5)) expect(entry?.isLearner).toBe(true);
    await expect(
      server.client.unary(Cluster.MemberUpdate, { ID: learner, peerURLs: selfPeerUrls }),
    ).rejects.toMatchObject(peerUrlsExist);
    await expect(
      server.client.unary(Cluster.MemberUpdate, { ID: 42n, peerURLs: ['http://127.0.0.1:1'] }),
    ).rejects.toMatchObject(memberNotFound);
  });

  it('updates its own peer URLs as given', async () => {
    if (!server.embedded) return; // a real etcd would advertise the new URL to no one, harmlessly; skip
    const updated = await server.client.unary(Cluster.MemberUpdate, {
      ID: self,
      peerURLs: ['http://127.0.0.1:2999'],
    });
    expect(updated.members[0]?.peerURLs).toEqual(['http://127.0.0.1:2999']);
  });

  it('removes the learner for good, but never the only voting member', async () => {
    const learner = (await addLearner('http://127.0.0.1:40001')).member?.ID ?? 0n;
    await expect(server.client.unary(Cluster.MemberRemove, { ID: self })).rejects.toMatchObject(
      status(UNKNOWN, 'etcdserver: re-configuration failed due to not enough started members'),
    );
    const removed = await server.client.unary(Cluster.MemberRemove, { ID: learner });
    expect(removed.members.map((m) => m.ID)).toEqual([self]);
    for (const call of [
      () => server.client.unary(Cluster.MemberRemove, { ID: learner }),
      () => server.client.unary(Cluster.MemberPromote, { ID: learner }),
      () => server.client.unary(Cluster.MemberUpdate, { ID: learner, peerURLs: ['http://a:1'] }),
      () => server.client.unary(Cluster.MemberRemove, { ID: 42n }),
    ]) {
      await expect(call()).rejects.toMatchObject(memberNotFound);
    }
    // The removed learner's URLs are free again (in another URL list, which gets another id).
    await addLearner('http://127.0.0.1:40001', 'http://127.0.0.1:40006');
  });

  it('refuses to move leadership to the learner', async () => {
    const learner = (await addLearner('http://127.0.0.1:40001')).member?.ID ?? 0n;
    await expect(
      server.client.unary(Maintenance.MoveLeader, { targetID: learner }),
    ).rejects.toMatchObject(status(FAILED_PRECONDITION, 'etcdserver: bad leader transferee'));
  });

  it('does not add a voting member (the embedded server has no second member to start)', async () => {
    // etcd accepts it and then, with one of two voting members started, loses quorum.
    if (!server.embedded) return;
    await expect(
      server.client.unary(Cluster.MemberAdd, { peerURLs: ['http://127.0.0.1:40001'] }),
    ).rejects.toMatchObject({ code: UNIMPLEMENTED });
    await expect(
      server.client.unary(Cluster.MemberAdd, { peerURLs: selfPeerUrls }),
    ).rejects.toMatchObject(peerUrlsExist);
    expect((await server.client.unary(Cluster.MemberList, {})).members).toHaveLength(1);
  });
});
