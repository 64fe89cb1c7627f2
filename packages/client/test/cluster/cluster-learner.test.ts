// A client and a learner, on the simulated cluster (whose learners refuse what etcd 3.4's refuse,
// checked against etcd 3.4.23 in packages/server-embedded/test/conformance/cluster-conformance.test.ts):
// a client pointed at a learner alone gets the typed refusal, and promotion's typed errors.
import { EmbeddedCluster } from '@etcdkit/server-embedded';
import { afterEach, expect, it } from 'vitest';
import {
  LearnerNotReadyError,
  MemberNotLearnerError,
  NotSupportedForLearnerError,
  type ServerErrorClass,
} from '../../src/errors.js';
import { Etcd } from '../../src/index.js';

/** Matches an etcd error by its stable code and exact message. */
const etcdError = (kind: ServerErrorClass) =>
  expect.objectContaining({ code: kind.errorCode, message: kind.etcdMessage });

let cluster: EmbeddedCluster | undefined;
const clients: Etcd[] = [];
afterEach(async () => {
  await Promise.all(clients.splice(0).map((client) => client.close()));
  await cluster?.stop();
  cluster = undefined;
});

// A small retry budget: etcd sends the learner refusal as Unavailable, which reads retry (on a
// learner alone, to no avail: with the default budget the read fails after 7-9 s).
const clientOf = (endpoints: readonly string[]): Etcd => {
  const client = new Etcd({ endpoints: [...endpoints], retry: { maxAttempts: 2, minDelayMs: 10 } });
  clients.push(client);
  return client;
};

it('a client of a learner alone: serializable reads are served, the rest is NotSupportedForLearnerError; promotion is LearnerNotReadyError until it starts', async () => {
  cluster = await EmbeddedCluster.start({ members: 3 });
  const voters = clientOf(cluster.endpoints);
  await voters.put('k', 'v');
  const { member } = await voters.cluster.memberAdd(['http://127.0.0.1:2'], { isLearner: true });
  await expect(voters.cluster.memberPromote(member.id)).rejects.toEqual(
    etcdError(LearnerNotReadyError),
  );

  const learner = await cluster.startAdded(member.id, { name: 'learner' });
  const client = clientOf([learner.endpoint]);
  expect((await client.get('k', { serializable: true }))?.text()).toBe('v');
  expect((await client.maintenance.status()).isLearner).toBe(true);
  await expect(client.get('k')).rejects.toEqual(etcdError(NotSupportedForLearnerError));
  // etcd refuses a write to a learner before proposing it, so nothing was applied: the client
  // tries another member (there is none here) and reports the refusal itself, never
  // OutcomeUnknownError.
  await expect(client.put('k', 'w')).rejects.toEqual(etcdError(NotSupportedForLearnerError));
  expect((await client.get('k', { serializable: true }))?.text()).toBe('v');

  await voters.cluster.memberPromote(member.id);
  await expect(voters.cluster.memberPromote(member.id)).rejects.toEqual(
    etcdError(MemberNotLearnerError),
  );
  await client.put('k', 'w');
  expect((await client.get('k'))?.text()).toBe('w');
});

it('a client with a learner among its endpoints sends what the learner refuses to a voting member, once', async () => {
  cluster = await EmbeddedCluster.start({ members: 3 });
  const voters = clientOf(cluster.endpoints);
  const { member } = await voters.cluster.memberAdd(['http://127.0.0.1:2'], { isLearner: true });
  const learner = await cluster.startAdded(member.id, { name: 'learner' });
  const voter = cluster.endpoints.find((endpoint) => endpoint !== learner.endpoint)!;
  const client = clientOf([learner.endpoint, voter]);
  const put = await client.put('counted', '1');
  expect((await client.get('counted'))?.text()).toBe('1');
  expect((await voters.get('counted'))?.modRevision).toBe(put.header.revision);
  expect(client.connection.currentEndpoint).toBe(new URL(voter).host);
});
