// The revokes Etcd.close() runs for what the client owns (the recipes' sessions revoke their leases
// that way): sent while the server answers, not sent once the lease keepalive stream found it gone,
// so close() does not wait for a connection that is not coming.
import { EmbeddedEtcd } from '@etcdkit/server-embedded';
import { describeEachBackend, describeRealEtcd, startEtcd } from '@etcdkit/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { ClientClosedError, EtcdError } from '../../src/errors.js';
import { Etcd } from '../../src/etcd.js';
import type { Lease } from '../../src/lease/lease.js';
import { nextKeepAlive } from './lease-keepalive-support.js';

const REVOKE = '/etcdserverpb.Lease/LeaseRevoke';

/** A client that records the method of every unary call it made (sent or failed). */
function recordingClient(endpoints: readonly string[]): { etcd: Etcd; calls: string[] } {
  const calls: string[] = [];
  const etcd = new Etcd({
    endpoints: [...endpoints],
    dialTimeoutMs: 500,
    hooks: { onCall: (event) => calls.push(event.method) },
  });
  return { etcd, calls };
}

/** Revokes `lease` when `etcd` closes, as a session does; resolves with how that revoke ended. */
function revokedOnClose(etcd: Etcd, lease: Lease): Promise<unknown> {
  return new Promise((resolve) => {
    // A minute: were this revoke sent to a dead server, close() would wait for all of it.
    etcd.ownedByClient(() => lease.revoke({ timeoutMs: 60_000 }).then(resolve, resolve));
  });
}

describeEachBackend(
  'Etcd.close revokes what it owns while the server answers',
  ({ backend, prefix }) => {
    let admin: Etcd;
    beforeAll(() => {
      admin = new Etcd({ endpoints: backend().endpoints });
    });
    afterAll(() => admin?.close());

    it('sends the revoke: the lease and its key are gone once close() resolves', async () => {
      const key = `${prefix()}owned`;
      const { etcd, calls } = recordingClient(backend().endpoints);
      const lease = await etcd.lease.grant(30, { keepAlive: true });
      // Listening at once: the first reply may come while the put is under way.
      const refreshed = nextKeepAlive(lease);
      await etcd.put(key, 'v', { lease });
      await refreshed;
      const revoked = revokedOnClose(etcd, lease);
      await etcd.close();
      expect(await revoked).toMatchObject({ header: expect.any(Object) });
      expect(calls.filter((method) => method === REVOKE)).toEqual([REVOKE]);
      expect((await admin.lease.timeToLive(lease.id)).ttl).toBe(-1n);
      expect(await admin.get(key)).toBeUndefined();
    });
  },
);

/**
 * Kills the server under a client keeping a lease alive, then closes the client: the revoke it
 * owns is not sent. A revoke outside close() still is (and fails): the rule is close()'s.
 */
async function closeAfterTheServerDied(endpoints: readonly string[], die: () => Promise<void>) {
  const { etcd, calls } = recordingClient(endpoints);
  const lease = await etcd.lease.grant(30, { keepAlive: true });
  const refreshed = nextKeepAlive(lease);
  const other = await etcd.lease.grant(30);
  await refreshed;
  const revoked = revokedOnClose(etcd, lease);
  await die();
  // The stream runs on the same connection: once a read found the server gone, so had the stream.
  await expect(etcd.get('any', { timeoutMs: 1_000 })).rejects.toBeInstanceOf(EtcdError);
  await expect(other.revoke({ timeoutMs: 300 })).rejects.toBeInstanceOf(EtcdError);
  expect(calls.filter((method) => method === REVOKE)).toEqual([REVOKE]);
  await etcd.close();
  const unsent = await revoked;
  expect(unsent).toBeInstanceOf(ClientClosedError);
  expect((unsent as ClientClosedError).message).toContain(
    `the revoke of lease ${lease.id.toString(16)} was not sent`,
  );
  // No second revoke went out: close() had nothing to wait for.
  expect(calls.filter((method) => method === REVOKE)).toEqual([REVOKE]);
  expect((await lease.lost).reason).toBe('revoked');
}

describe('Etcd.close with the server gone', () => {
  it('does not send the revoke it owns once the keepalive stream lost the embedded server', async () => {
    const server = await EmbeddedEtcd.start();
    try {
      await closeAfterTheServerDied(server.endpoints, () => server.stop());
    } finally {
      await server.stop();
    }
  });
});

describeRealEtcd('Etcd.close with etcd killed', () => {
  it('does not send the revoke it owns once the keepalive stream lost etcd', async () => {
    const server = await startEtcd();
    try {
      await closeAfterTheServerDied(server.endpoints, () => server.kill());
    } finally {
      await server.stop();
    }
  });
});
