// Maintenance and Cluster calls with auth on. etcd 3.5+ (and the embedded server) want a user for
// Status, MemberList and listing alarms, and the root role for everything that changes or dumps
// the member (Hash, HashKV, Defragment, Snapshot, MoveLeader, raising or clearing alarms,
// membership changes). etcd 3.4 checks fewer of them and answers some with the auth store's own
// text and status Unknown; both answers are spelled out. Both backends.
import {
  etcdserverpb_Cluster as Cluster,
  etcdserverpb_Maintenance as Maintenance,
} from '@etcdkit/client/protocol';
import { expect, it } from 'vitest';
import {
  type AuthClient,
  Code,
  describeAuth,
  Errors,
  failure,
  isModern,
  READ,
  type Status,
  setUpAuth,
} from './auth-support.js';

/** What 3.4's maintenance server answers for an auth error it does not map to a gRPC status. */
const unmapped = (message: string): Status => ({ code: Code.UNKNOWN, details: `auth: ${message}` });

/** The root-only maintenance calls, by name. */
function rootOnly(client: AuthClient, memberId: bigint) {
  return {
    hash: (token?: string) => client.unary(Maintenance.Hash, {}, token),
    hashKv: (token?: string) => client.unary(Maintenance.HashKV, {}, token),
    defragment: (token?: string) => client.unary(Maintenance.Defragment, {}, token),
    snapshot: (token?: string) => client.serverStream(Maintenance.Snapshot, {}, token),
    moveLeader: (token?: string) =>
      client.unary(Maintenance.MoveLeader, { targetID: memberId }, token),
    activate: (token?: string) =>
      client.unary(Maintenance.Alarm, { action: 1, memberID: memberId, alarm: 2 }, token),
  };
}

/** A token no server issued, at an index the log has reached. */
const UNKNOWN_TOKEN = 'abcdefghijklmnop.1';

/** etcd 3.5, whose maintenance checks differ from both 3.4's and 3.6's. */
const isV35 = (version: string) => version.startsWith('3.5.');

describeAuth(
  'maintenance and cluster permissions',
  ({ fresh }) => {
    it('Status, MemberList and listing alarms need a user on etcd 3.5+ (Status root on 3.5)', async () => {
      const { client, version } = await fresh();
      const { alice, root } = await setUpAuth(client, { alice: [{ type: READ, key: 'a' }] });
      const reads = {
        status: (token?: string) => client.unary(Maintenance.Status, {}, token),
        memberList: (token?: string) => client.unary(Cluster.MemberList, {}, token),
        alarms: (token?: string) => client.unary(Maintenance.Alarm, { action: 0 }, token),
      };
      for (const [name, read] of Object.entries(reads)) {
        // etcd 3.5 (3.5.30) wants root for Status (its maintenance server's isAuthenticated).
        if (name === 'status' && isV35(version)) {
          expect(await failure(read(alice))).toEqual(Errors.permissionDenied);
          await read(root);
        } else {
          await read(alice);
        }
        if (isModern(version)) {
          expect(await failure(read())).toEqual(Errors.userEmpty);
          expect(await failure(read(UNKNOWN_TOKEN))).toEqual(Errors.invalidToken);
        } else {
          await read();
          // etcd 3.4 looks at no token for Status and MemberList; listing alarms is proposed, and
          // its maintenance server answers the auth store's error unmapped.
          if (name === 'alarms') {
            expect(await failure(read(UNKNOWN_TOKEN))).toEqual(unmapped('invalid auth token'));
          } else {
            await read(UNKNOWN_TOKEN);
          }
        }
      }
    });

    it('Hash, HashKV, Defragment, Snapshot, MoveLeader and raising alarms are for root', async () => {
      const { client, version } = await fresh();
      const { alice, root } = await setUpAuth(client, { alice: [{ type: READ, key: 'a' }] });
      const memberId = (await client.unary(Maintenance.Status, {}, root)).header?.memberId ?? 0n;
      const calls = rootOnly(client, memberId);
      const modern = isModern(version);
      // etcd 3.4 and 3.5 check these in their maintenance server and answer the auth store's own
      // error; 3.4 does not check the other two.
      const unmappedBefore36 = new Set(['hash', 'hashKv', 'defragment', 'snapshot']);
      for (const [name, call] of Object.entries(calls)) {
        if ((!modern || isV35(version)) && unmappedBefore36.has(name)) {
          expect(await failure(call()), name).toEqual(unmapped('user name is empty'));
          expect(await failure(call(alice)), name).toEqual(unmapped('permission denied'));
          expect(await failure(call(UNKNOWN_TOKEN)), name).toEqual(unmapped('invalid auth token'));
        } else if (modern) {
          expect(await failure(call()), name).toEqual(Errors.userEmpty);
          expect(await failure(call(alice)), name).toEqual(Errors.permissionDenied);
          expect(await failure(call(UNKNOWN_TOKEN)), name).toEqual(Errors.invalidToken);
        }
      }
      for (const call of Object.values(calls)) await call(root);
      expect((await client.unary(Maintenance.Alarm, { action: 0 }, root)).alarms).toHaveLength(1);
    });

    it('membership changes are for root; the peer URLs are checked first', async () => {
      const { client } = await fresh();
      const { alice, root } = await setUpAuth(client, { alice: [{ type: READ, key: 'a' }] });
      const add = (token?: string, peerURLs = ['http://127.0.0.1:1']) =>
        client.unary(Cluster.MemberAdd, { peerURLs, isLearner: true }, token);
      expect(await failure(add(undefined, ['not a url']))).toEqual({
        code: Code.INVALID_ARGUMENT,
        details: 'etcdserver: given member URLs are invalid',
      });
      expect(await failure(add())).toEqual(Errors.userEmpty);
      expect(await failure(add(alice))).toEqual(Errors.permissionDenied);
      const added = await add(root);
      const learner = added.member?.ID ?? 0n;
      expect(await failure(client.unary(Cluster.MemberRemove, { ID: learner }, alice))).toEqual(
        Errors.permissionDenied,
      );
      expect(
        await failure(
          client.unary(
            Cluster.MemberUpdate,
            { ID: learner, peerURLs: ['http://127.0.0.1:2'] },
            alice,
          ),
        ),
      ).toEqual(Errors.permissionDenied);
      expect(await failure(client.unary(Cluster.MemberPromote, { ID: learner }, alice))).toEqual(
        Errors.permissionDenied,
      );
      await client.unary(Cluster.MemberRemove, { ID: learner }, root);
    });
  },
  { embeddedAs: ['3.4'] },
);
