// Every entry of the error catalog (the client's etcdErrors and etcdErrorVariants, which the
// embedded server answers from) provoked on each backend, its status and message compared exactly
// with the entry: on real etcd 3.4.23 that pins the entry, on the embedded server it checks that the
// server sends it where etcd does. The entries real etcd cannot be made to send here are listed
// with the reason (those that need several members are pinned by cluster-conformance.test.ts,
// which reads its expectations from the catalog); the object below has to name every entry, or it
// does not compile.
import {
  type EtcdErrorVariantName,
  type EtcdServerErrorCode,
  etcdErrors,
  etcdErrorVariants,
} from '@etcdkit/client';
import {
  etcdserverpb_Auth as Auth,
  etcdserverpb_Cluster as Cluster,
  v3electionpb_Election as Election,
  etcdserverpb,
  etcdserverpb_KV as KV,
  etcdserverpb_Lease as Lease,
  etcdserverpb_Maintenance as Maintenance,
} from '@etcdkit/client/protocol';
import { describeEachBackend } from '@etcdkit/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { b } from '../support/bytes.js';
import type { TestServer } from '../support/test-server.js';
import { CONFORMANCE_BACKENDS, startFreshServer } from './fresh-server.js';

type Entry = EtcdServerErrorCode | EtcdErrorVariantName;

/** The servers a group of provocations shares; each group gets a fresh one. */
type Group = 'kv' | 'cluster' | 'auth-off' | 'auth-on' | 'alarms';

/** A call that fails with the entry, on `server` (the group's, set up by its `setUp`). */
type Provoke = (server: TestServer, context: GroupContext) => Promise<unknown>;

interface GroupContext {
  /** The root user's token, in the `auth-on` group. */
  rootToken: string;
  /** The member's id. */
  memberId: bigint;
}

/**
 * Provoked on both backends; or not provoked on real etcd, for the reason `cannot` says, and then
 * on the embedded server only when it sends the error (where a later etcd does).
 */
type Case =
  | { readonly group: Group; readonly provoke: Provoke }
  | {
      readonly cannot: string;
      readonly embedded?: { readonly group: Group; readonly provoke: Provoke };
    };

const AlarmAction = etcdserverpb.AlarmRequest.AlarmAction;
const AlarmType = etcdserverpb.AlarmType;
const memberOnly = 'needs a cluster of several members';
/** Entries pinned on a real 3-member cluster instead, by the cluster conformance suite. */
const onCluster = `${memberOnly}: pinned by cluster-conformance.test.ts, from the catalog`;
/** Downgrade's entries: etcd 3.5+, pinned on 3.5.30 by 10-downgrade.test.ts, from the catalog. */
const onDowngrade = 'etcd 3.5+ (3.4 has no Downgrade): pinned by 10-downgrade.test.ts';
/** etcd 3.4's maintenance root checks: pinned on 3.4.23 by test/auth/admin-permissions.test.ts. */
const onMaintenance34 = "etcd 3.4's Hash/Snapshot root checks: pinned by auth/admin-permissions";

/** Raises `alarm`, runs `call`, and clears the alarm again whatever happened. */
async function underAlarm(
  server: TestServer,
  memberId: bigint,
  alarm: etcdserverpb.AlarmType,
  call: () => Promise<unknown>,
): Promise<unknown> {
  await server.client.unary(Maintenance.Alarm, {
    action: AlarmAction.ACTIVATE,
    memberID: memberId,
    alarm,
  });
  try {
    return await call();
  } finally {
    await server.client.unary(Maintenance.Alarm, {
      action: AlarmAction.DEACTIVATE,
      memberID: memberId,
      alarm,
    });
  }
}

const put = (key: string) => ({ requestPut: { key: b(key), value: b('v') } });

const cases: { readonly [E in Entry]: Case } = {
  EMPTY_KEY: { group: 'kv', provoke: (s) => s.client.unary(KV.Put, { key: b(''), value: b('v') }) },
  KEY_NOT_FOUND: {
    group: 'kv',
    provoke: (s) => s.client.unary(KV.Put, { key: b('missing'), ignoreValue: true }),
  },
  VALUE_PROVIDED: {
    group: 'kv',
    provoke: (s) => s.client.unary(KV.Put, { key: b('k'), value: b('v'), ignoreValue: true }),
  },
  LEASE_PROVIDED: {
    group: 'kv',
    provoke: (s) => s.client.unary(KV.Put, { key: b('k'), lease: 1n, ignoreLease: true }),
  },
  TOO_MANY_TXN_OPS: {
    group: 'kv',
    provoke: (s) =>
      s.client.unary(KV.Txn, { success: Array.from({ length: 129 }, (_, i) => put(`op${i}`)) }),
  },
  DUPLICATE_KEY: {
    group: 'kv',
    provoke: (s) => s.client.unary(KV.Txn, { success: [put('twice'), put('twice')] }),
  },
  INVALID_SORT_OPTION: {
    cannot: 'etcd 3.6+ (3.4 takes an unknown sort order as none)',
    embedded: {
      group: 'kv',
      provoke: (s) =>
        s.client.unary(KV.Range, {
          key: b('k'),
          sortOrder: 7 as etcdserverpb.RangeRequest.SortOrder,
        }),
    },
  },
  REQUEST_TOO_LARGE: {
    group: 'kv',
    provoke: (s) =>
      s.client.unary(KV.Put, { key: b('big'), value: new Uint8Array(1.5 * 1024 * 1024 + 1) }),
  },
  TOO_MANY_REQUESTS: {
    cannot: "needs etcd's apply loop 5,000 entries behind its commit index",
  },
  COMPACTED: {
    group: 'kv',
    provoke: async (s) => {
      const { header } = await s.client.unary(KV.Put, { key: b('c'), value: b('v') });
      await s.client.unary(KV.Compact, { revision: header?.revision ?? 0n });
      return s.client.unary(KV.Range, { key: b('c'), revision: 1n });
    },
  },
  FUTURE_REVISION: {
    group: 'kv',
    provoke: (s) => s.client.unary(KV.Range, { key: b('k'), revision: 1_000_000n }),
  },
  NO_SPACE: {
    group: 'alarms',
    provoke: (s, { memberId }) =>
      underAlarm(s, memberId, AlarmType.NOSPACE, () =>
        s.client.unary(KV.Put, { key: b('k'), value: b('v') }),
      ),
  },
  LEASE_NOT_FOUND: {
    group: 'kv',
    provoke: (s) => s.client.unary(Lease.LeaseRevoke, { ID: 4242n }),
  },
  LEASE_EXISTS: {
    group: 'kv',
    provoke: async (s) => {
      await s.client.unary(Lease.LeaseGrant, { TTL: 60n, ID: 77n });
      return s.client.unary(Lease.LeaseGrant, { TTL: 60n, ID: 77n });
    },
  },
  LEASE_TTL_TOO_LARGE: {
    group: 'kv',
    provoke: (s) => s.client.unary(Lease.LeaseGrant, { TTL: 9_000_000_001n, ID: 0n }),
  },
  WATCH_CANCELED: {
    cannot: 'ends only a watch stream its client canceled, so no client reads it',
  },
  MEMBER_EXISTS: {
    cannot:
      'the server picks a new member id (from its URLs and the time): MemberAdd cannot name one',
  },
  PEER_URL_EXISTS: {
    group: 'cluster',
    provoke: async (s) => {
      const { members } = await s.client.unary(Cluster.MemberList, {});
      return s.client.unary(Cluster.MemberAdd, { peerURLs: members[0]?.peerURLs ?? [] });
    },
  },
  MEMBER_NOT_ENOUGH_STARTED: {
    group: 'cluster',
    provoke: (s, { memberId }) => s.client.unary(Cluster.MemberRemove, { ID: memberId }),
  },
  MEMBER_BAD_URLS: {
    group: 'cluster',
    provoke: (s) => s.client.unary(Cluster.MemberAdd, { peerURLs: ['not-a-url'], isLearner: true }),
  },
  MEMBER_NOT_FOUND: {
    group: 'cluster',
    provoke: (s) => s.client.unary(Cluster.MemberRemove, { ID: 4242n }),
  },
  MEMBER_NOT_LEARNER: {
    group: 'cluster',
    provoke: (s, { memberId }) => s.client.unary(Cluster.MemberPromote, { ID: memberId }),
  },
  LEARNER_NOT_READY: {
    group: 'cluster',
    provoke: async (s) => {
      const { member } = await s.client.unary(Cluster.MemberAdd, {
        peerURLs: ['http://127.0.0.1:9'],
        isLearner: true,
      });
      try {
        return await s.client.unary(Cluster.MemberPromote, { ID: member?.ID ?? 0n });
      } finally {
        await s.client.unary(Cluster.MemberRemove, { ID: member?.ID ?? 0n });
      }
    },
  },
  TOO_MANY_LEARNERS: {
    group: 'cluster',
    provoke: async (s) => {
      // Other URLs than LEARNER_NOT_READY's: a member re-added with a removed one's URLs within
      // the same second gets its (removed) id, and etcd answers MEMBER_NOT_FOUND.
      const { member } = await s.client.unary(Cluster.MemberAdd, {
        peerURLs: ['http://127.0.0.1:8'],
        isLearner: true,
      });
      try {
        return await s.client.unary(Cluster.MemberAdd, {
          peerURLs: ['http://127.0.0.1:7'],
          isLearner: true,
        });
      } finally {
        await s.client.unary(Cluster.MemberRemove, { ID: member?.ID ?? 0n });
      }
    },
  },
  CLUSTER_ID_MISMATCH: { cannot: 'newer than etcd 3.4 (3.4 reads no cluster-id header)' },
  ROOT_USER_NOT_EXIST: { group: 'auth-off', provoke: (s) => s.client.unary(Auth.AuthEnable, {}) },
  ROOT_ROLE_NOT_EXIST: {
    group: 'auth-off',
    provoke: async (s) => {
      await s.client.unary(Auth.UserAdd, { name: 'root', password: 'rootpw' });
      try {
        return await s.client.unary(Auth.AuthEnable, {});
      } finally {
        await s.client.unary(Auth.UserDelete, { name: 'root' });
      }
    },
  },
  USER_ALREADY_EXISTS: {
    group: 'auth-off',
    provoke: async (s) => {
      await s.client.unary(Auth.UserAdd, { name: 'twice', password: 'pw' });
      return s.client.unary(Auth.UserAdd, { name: 'twice', password: 'pw' });
    },
  },
  USER_EMPTY: {
    group: 'auth-off',
    provoke: (s) => s.client.unary(Auth.UserAdd, { name: '', password: 'pw' }),
  },
  USER_NOT_FOUND: {
    group: 'auth-off',
    provoke: (s) => s.client.unary(Auth.UserGet, { name: 'nobody' }),
  },
  ROLE_ALREADY_EXISTS: {
    group: 'auth-off',
    provoke: async (s) => {
      await s.client.unary(Auth.RoleAdd, { name: 'twice' });
      return s.client.unary(Auth.RoleAdd, { name: 'twice' });
    },
  },
  ROLE_NOT_FOUND: {
    group: 'auth-off',
    provoke: (s) => s.client.unary(Auth.RoleGet, { role: 'none' }),
  },
  ROLE_EMPTY: { group: 'auth-off', provoke: (s) => s.client.unary(Auth.RoleAdd, { name: '' }) },
  AUTH_FAILED: {
    group: 'auth-on',
    provoke: (s) => s.client.unary(Auth.Authenticate, { name: 'root', password: 'wrong' }),
  },
  PERMISSION_NOT_GIVEN: {
    cannot: 'newer than etcd 3.4 (3.4.23 drops the connection and stops answering at such a grant)',
    embedded: {
      group: 'auth-off',
      provoke: async (s) => {
        await s.client.unary(Auth.RoleAdd, { name: 'no-perm' });
        return s.client.unary(Auth.RoleGrantPermission, { name: 'no-perm' });
      },
    },
  },
  PERMISSION_DENIED: {
    group: 'auth-on',
    provoke: async (s) => {
      const { token } = await s.client.unary(Auth.Authenticate, { name: 'plain', password: 'pw' });
      return s.client.unary(KV.Range, { key: b('k') }, { metadata: { token } });
    },
  },
  ROLE_NOT_GRANTED: {
    group: 'auth-off',
    provoke: async (s) => {
      await s.client.unary(Auth.UserAdd, { name: 'no-role', password: 'pw' });
      await s.client.unary(Auth.RoleAdd, { name: 'not-granted' });
      return s.client.unary(Auth.UserRevokeRole, { name: 'no-role', role: 'not-granted' });
    },
  },
  PERMISSION_NOT_GRANTED: {
    group: 'auth-off',
    provoke: async (s) => {
      await s.client.unary(Auth.RoleAdd, { name: 'bare' });
      return s.client.unary(Auth.RoleRevokePermission, { role: 'bare', key: b('k') });
    },
  },
  AUTH_NOT_ENABLED: {
    group: 'auth-off',
    provoke: (s) => s.client.unary(Auth.Authenticate, { name: 'root', password: 'rootpw' }),
  },
  INVALID_AUTH_TOKEN: {
    group: 'auth-on',
    provoke: (s) => s.client.unary(KV.Range, { key: b('k') }, { metadata: { token: 'bogus' } }),
  },
  INVALID_AUTH_MGMT: {
    group: 'auth-on',
    provoke: (s, { rootToken }) =>
      s.client.unary(Auth.UserDelete, { name: 'root' }, { metadata: { token: rootToken } }),
  },
  AUTH_OLD_REVISION: {
    cannot:
      "needs the auth store to change between a request's authorization and its apply (a race)",
  },
  NO_LEADER: { cannot: onCluster },
  NOT_LEADER: { cannot: onCluster },
  LEADER_CHANGED: { cannot: 'needs a leader change while a linearizable read waits (a race)' },
  NOT_CAPABLE: { cannot: 'etcd 3.4 has no request its own cluster version refuses' },
  SERVER_STOPPED: { cannot: 'needs a request in flight while the member stops (a race)' },
  REQUEST_TIMEOUT: { cannot: onCluster },
  UNHEALTHY: { cannot: onCluster },
  CORRUPT: {
    group: 'alarms',
    provoke: (s, { memberId }) =>
      underAlarm(s, memberId, AlarmType.CORRUPT, () =>
        s.client.unary(KV.Put, { key: b('k'), value: b('v') }),
      ),
  },
  NOT_SUPPORTED_FOR_LEARNER: { cannot: onCluster },
  BAD_LEADER_TRANSFEREE: {
    group: 'cluster',
    provoke: (s) => s.client.unary(Maintenance.MoveLeader, { targetID: 4242n }),
  },
  WRONG_DOWNGRADE_VERSION_FORMAT: { cannot: onDowngrade },
  INVALID_DOWNGRADE_TARGET_VERSION: { cannot: onDowngrade },
  DOWNGRADE_IN_PROCESS: { cannot: onDowngrade },
  NO_INFLIGHT_DOWNGRADE: { cannot: onDowngrade },
  UNKNOWN_METHOD: { cannot: onDowngrade },
  REQUEST_CANCELED: { cannot: 'newer than etcd 3.4 (3.4 has no status for a canceled request)' },
  ELECTION_NOT_LEADER: {
    group: 'kv',
    provoke: async (s) => {
      const { ID } = await s.client.unary(Lease.LeaseGrant, { TTL: 60n, ID: 0n });
      const leader = { name: b('e'), key: b('e/not-mine'), rev: 1n, lease: ID };
      return s.client.unary(Election.Proclaim, { leader, value: b('v') });
    },
  },
  ELECTION_NO_LEADER: {
    group: 'kv',
    provoke: (s) => s.client.unary(Election.Leader, { name: b('no-candidates') }),
  },
  MISSING_LEADER_KEY: {
    group: 'kv',
    provoke: (s) => s.client.unary(Election.Proclaim, { value: b('v') }),
  },
  LOCK_SESSION_EXPIRED: { cannot: 'etcd 3.5+ (3.4 reports such a lock as held)' },
  ELECTION_SESSION_EXPIRED: { cannot: "the embedded server's own (etcd issue 11051)" },
  TIMEOUT_DUE_TO_LEADER_FAIL: { cannot: `${memberOnly}, whose leader failed` },
  TIMEOUT_DUE_TO_CONNECTION_LOST: { cannot: `${memberOnly}, cut off from the others` },
  TIMEOUT_WAIT_APPLIED_INDEX: {
    cannot: 'needs the apply loop to lag behind a linearizable read (a race)',
  },
  PROPOSAL_TIMEOUT: { cannot: onCluster },
  AUTH_STORE_USER_EMPTY: { cannot: onMaintenance34 },
  AUTH_STORE_PERMISSION_DENIED: { cannot: onMaintenance34 },
  AUTH_STORE_INVALID_TOKEN: { cannot: onMaintenance34 },
  NO_PASSWORD_USER: {
    group: 'auth-on',
    provoke: (s) => s.client.unary(Auth.Authenticate, { name: 'no-password', password: 'pw' }),
  },
};

/** The status and message of an entry, as the catalog has them. */
function expected(entry: Entry): { code: number; details: string } {
  if (entry in etcdErrors) {
    const [code, details] = etcdErrors[entry as EtcdServerErrorCode];
    return { code, details };
  }
  const variant = etcdErrorVariants[entry as EtcdErrorVariantName];
  return { code: variant.status, details: variant.message };
}

/** Prepares a group's fresh server; returns what its provocations need. */
async function setUp(group: Group, server: TestServer): Promise<GroupContext> {
  const status = await server.client.unary(Maintenance.Status, {});
  const context = { rootToken: '', memberId: status.header?.memberId ?? 0n };
  if (group === 'auth-on') {
    const c = server.client;
    await c.unary(Auth.UserAdd, { name: 'root', password: 'rootpw' });
    await c.unary(Auth.UserGrantRole, { user: 'root', role: 'root' });
    await c.unary(Auth.UserAdd, { name: 'plain', password: 'pw' });
    await c.unary(Auth.UserAdd, {
      name: 'no-password',
      options: { noPassword: true },
    });
    await c.unary(Auth.AuthEnable, {});
    context.rootToken = (
      await c.unary(Auth.Authenticate, { name: 'root', password: 'rootpw' })
    ).token;
  }
  return context;
}

/** What runs on `backend`. */
const provokedOn = (backend: string) =>
  Object.entries(cases).flatMap(([entry, c]) => {
    if ('group' in c) return [{ entry: entry as Entry, ...c }];
    return backend === 'embedded' && c.embedded ? [{ entry: entry as Entry, ...c.embedded }] : [];
  });
const groups: readonly Group[] = ['kv', 'cluster', 'auth-off', 'auth-on', 'alarms'];

describeEachBackend(
  'conformance: the error catalog, word for word',
  ({ name }) => {
    for (const group of groups) {
      describe(group, () => {
        let server: TestServer | undefined;
        let context: GroupContext | undefined;
        beforeAll(async () => {
          server = await startFreshServer(name);
          context = await setUp(group, server);
        });
        afterAll(async () => {
          await server?.stop();
        });
        for (const { entry, provoke } of provokedOn(name).filter((c) => c.group === group)) {
          it(`${entry}: ${expected(entry).details}`, async () => {
            if (server === undefined || context === undefined) throw new Error('no server');
            await expect(provoke(server, context)).rejects.toMatchObject(expected(entry));
          });
        }
      });
    }
  },
  { only: CONFORMANCE_BACKENDS },
);

describe('the error catalog', () => {
  it('names, for every entry real etcd is not made to send here, why', () => {
    const unprovoked = Object.entries(cases).filter(([, c]) => 'cannot' in c);
    expect(unprovoked.map(([entry]) => entry).sort()).toEqual([
      'AUTH_OLD_REVISION',
      'AUTH_STORE_INVALID_TOKEN',
      'AUTH_STORE_PERMISSION_DENIED',
      'AUTH_STORE_USER_EMPTY',
      'CLUSTER_ID_MISMATCH',
      'DOWNGRADE_IN_PROCESS',
      'ELECTION_SESSION_EXPIRED',
      'INVALID_DOWNGRADE_TARGET_VERSION',
      'INVALID_SORT_OPTION',
      'LEADER_CHANGED',
      'LOCK_SESSION_EXPIRED',
      'MEMBER_EXISTS',
      'NOT_CAPABLE',
      'NOT_LEADER',
      'NOT_SUPPORTED_FOR_LEARNER',
      'NO_INFLIGHT_DOWNGRADE',
      'NO_LEADER',
      'PERMISSION_NOT_GIVEN',
      'PROPOSAL_TIMEOUT',
      'REQUEST_CANCELED',
      'REQUEST_TIMEOUT',
      'SERVER_STOPPED',
      'TIMEOUT_DUE_TO_CONNECTION_LOST',
      'TIMEOUT_DUE_TO_LEADER_FAIL',
      'TIMEOUT_WAIT_APPLIED_INDEX',
      'TOO_MANY_REQUESTS',
      'UNHEALTHY',
      'UNKNOWN_METHOD',
      'WATCH_CANCELED',
      'WRONG_DOWNGRADE_VERSION_FORMAT',
    ]);
    expect(provokedOn('etcd')).toHaveLength(
      Object.keys(etcdErrors).length + Object.keys(etcdErrorVariants).length - unprovoked.length,
    );
  });
});
