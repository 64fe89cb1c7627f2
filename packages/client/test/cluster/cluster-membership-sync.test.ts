// The Cluster API and endpoint sync while voting members come and go, on the simulated cluster
// (which adds and removes them as etcd 3.4 does, strict reconfiguration check included; see
// packages/server-embedded/test/conformance/cluster-conformance.test.ts for the real comparison).
import { EmbeddedCluster, type EmbeddedClusterMember } from '@etcdkit/server-embedded';
import { afterEach, expect, it } from 'vitest';
import {
  MemberNotEnoughStartedError,
  MemberNotFoundError,
  type ServerErrorClass,
  UnhealthyClusterError,
} from '../../src/errors.js';
import { Etcd } from '../../src/index.js';

/** Matches an etcd error by its stable code and exact message. */
const etcdError = (kind: ServerErrorClass) =>
  expect.objectContaining({ code: kind.errorCode, message: kind.etcdMessage });

/**
 * A strict-check refusal as the client reports it: the etcd error itself (its code, not
 * OUTCOME_UNKNOWN). etcd sends these with status Unavailable ("unhealthy cluster") or Unknown ("not
 * enough started members"), statuses that usually leave a write's outcome unknown, but it refuses
 * them before proposing anything.
 */
const refusedWrite = etcdError;

let cluster: EmbeddedCluster | undefined;
let etcd: Etcd | undefined;
afterEach(async () => {
  await etcd?.close();
  etcd = undefined;
  await cluster?.stop();
  cluster = undefined;
});

it('endpoint sync skips an added member until it starts, then takes its endpoint; a removed one is dropped', async () => {
  cluster = await EmbeddedCluster.start({ members: 3 });
  const [m0, m1, m2] = cluster.members as [
    EmbeddedClusterMember,
    EmbeddedClusterMember,
    EmbeddedClusterMember,
  ];
  etcd = new Etcd({ endpoints: [m1.endpoint], dialTimeoutMs: 1_000 });
  const { member } = await etcd.cluster.memberAdd(['http://127.0.0.1:1']);
  expect({ name: member.name, clientUrls: member.clientUrls }).toEqual({
    name: '',
    clientUrls: [],
  });
  // Not started: it has no client URL to offer.
  const synced = await etcd.syncEndpoints();
  expect([...synced.endpoints].sort()).toEqual([m0, m1, m2].map((m) => m.endpoint).sort());
  // Another add meanwhile: etcd 3.4 refuses any while a voter is unreachable; from 3.5 a connected
  // quorum with the new member counted is enough (the cluster answers as its etcd version).
  const { version } = await etcd.maintenance.status();
  const second = etcd.cluster.memberAdd(['http://127.0.0.1:2']);
  if (version.startsWith('3.4.')) {
    await expect(second).rejects.toEqual(refusedWrite(UnhealthyClusterError));
  } else {
    await etcd.cluster.memberRemove((await second).member.id);
  }

  const m3 = await cluster.startAdded(member.id);
  const joined = await etcd.syncEndpoints();
  expect([...joined.endpoints].sort()).toEqual([m0, m1, m2, m3].map((m) => m.endpoint).sort());

  // The member the client talks to is removed: its port closes, the client goes on elsewhere,
  // and the next sync drops it.
  await etcd.cluster.memberRemove(m1.memberId);
  await m1.exited();
  await etcd.put('k', 'after');
  expect(etcd.connection.currentEndpoint).not.toBe(new URL(m1.endpoint).host);
  const after = await etcd.syncEndpoints();
  expect([...after.endpoints].sort()).toEqual([m0, m2, m3].map((m) => m.endpoint).sort());
  await expect(etcd.cluster.memberRemove(m1.memberId)).rejects.toEqual(
    etcdError(MemberNotFoundError),
  );
});

it('a voting member added to a single member: the next add is refused as not enough started members', async () => {
  cluster = await EmbeddedCluster.start({ members: 1 });
  etcd = new Etcd({ endpoints: [...cluster.endpoints] });
  await etcd.cluster.memberAdd(['http://127.0.0.1:1']);
  expect(cluster.leader).toBeUndefined();
  await expect(etcd.cluster.memberAdd(['http://127.0.0.1:2'])).rejects.toEqual(
    refusedWrite(MemberNotEnoughStartedError),
  );
});
