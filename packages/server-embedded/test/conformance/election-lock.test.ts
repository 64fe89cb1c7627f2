// Conformance against etcd: the Election and Lock services when a waiter's key vanishes (its lease
// revoked, or the key deleted) while it waits. etcd runs Go's recipes on the server: Campaign
// (3.4 to 3.6) waits for every earlier candidate to go and then reports leadership without reading
// its own key again; Lock does the same on 3.4 and reads its key on its turn from 3.5 (etcd issue
// 11456).
import {
  v3electionpb_Election as Election,
  etcdserverpb_KV as KV,
  etcdserverpb_Lease as Lease,
  v3lockpb_Lock as Lock,
} from '@etcdkit/client/protocol';
import { expect, it } from 'vitest';
import { b, text } from '../support/bytes.js';
import type { TestServer } from '../support/test-server.js';
import { atLeast } from './fresh-server.js';
import { describeConformance, etcdError } from './suite.js';

const grant = async (server: TestServer) =>
  (await server.client.unary(Lease.LeaseGrant, { TTL: 60n, ID: 0n })).ID;
const revoke = (server: TestServer, ID: bigint) => server.client.unary(Lease.LeaseRevoke, { ID });
const remove = (server: TestServer, key: Uint8Array) =>
  server.client.unary(KV.DeleteRange, { key });

/** Keys under `name/`, oldest first. */
async function queue(server: TestServer, name: string): Promise<string[]> {
  const read = await server.client.unary(KV.Range, {
    key: b(`${name}/`),
    rangeEnd: b(`${name}0`),
    sortOrder: 1,
    sortTarget: 2,
  });
  return read.kvs.map((kv) => text(kv.key));
}

async function queued(server: TestServer, name: string, length: number): Promise<void> {
  for (let i = 0; i < 250 && (await queue(server, name)).length !== length; i++) {
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
  expect(await queue(server, name)).toHaveLength(length);
}

/** Still unsettled once the server has had time to answer (it must not answer before its turn). */
async function stillWaiting(call: Promise<unknown>): Promise<boolean> {
  const pending = Symbol('pending');
  await new Promise((resolve) => setTimeout(resolve, 300));
  return (
    (await Promise.race([
      call.then(
        () => undefined,
        () => undefined,
      ),
      pending,
    ])) === pending
  );
}

type Vanish = 'revoke' | 'delete';
const vanishings: readonly Vanish[] = ['revoke', 'delete'];

/** Makes the waiter's key `key` on `lease` vanish, as `how` says. */
async function vanish(server: TestServer, how: Vanish, key: Uint8Array, lease: bigint) {
  if (how === 'revoke') await revoke(server, lease);
  else await remove(server, key);
}

describeConformance('Election and Lock: a waiter whose key vanished', ({ fresh }) => {
  for (const how of vanishings) {
    it(`Campaign, the key vanished (${how}) while waiting: on its turn it is elected with that key, as every etcd answers`, async () => {
      const server = await fresh();
      const [first, second] = [await grant(server), await grant(server)];
      const leading = await server.client.unary(Election.Campaign, {
        name: b('e'),
        lease: first,
        value: b('one'),
      });
      const waiting = server.client.unary(Election.Campaign, {
        name: b('e'),
        lease: second,
        value: b('two'),
      });
      waiting.catch(() => {});
      await queued(server, 'e', 2);
      const key = b(`e/${second.toString(16)}`);
      // The waiter's put is the store's second write: revision 3 (grants make none).
      expect((await server.client.unary(KV.Range, { key })).kvs[0]?.createRevision).toBe(3n);
      await vanish(server, how, key, second);
      expect(await stillWaiting(waiting)).toBe(true);
      await server.client.unary(Election.Resign, { leader: leading.leader });
      const elected = await waiting;
      const { name, rev, lease } = elected.leader ?? {};
      expect({ name: text(name), key: text(elected.leader?.key), rev, lease }).toEqual({
        name: 'e',
        key: text(key),
        rev: 3n,
        lease: second,
      });
      // The header is the campaign's own txn's, as Go's Election keeps it.
      expect(elected.header?.revision).toBe(3n);
      expect(await queue(server, 'e')).toEqual([]);
    });

    it(`Lock, the key vanished (${how}) while waiting: on its turn 3.4 answers it held, 3.5 on fails 'mutex: session is expired'`, async () => {
      const server = await fresh();
      const [first, second] = [await grant(server), await grant(server)];
      const held = await server.client.unary(Lock.Lock, { name: b('l'), lease: first });
      const waiting = server.client.unary(Lock.Lock, { name: b('l'), lease: second });
      waiting.catch(() => {});
      await queued(server, 'l', 2);
      const key = b(`l/${second.toString(16)}`);
      await vanish(server, how, key, second);
      expect(await stillWaiting(waiting)).toBe(true);
      const released = await server.client.unary(Lock.Unlock, { key: held.key });
      if (atLeast(server.version, 3, 5)) {
        await expect(waiting).rejects.toMatchObject(etcdError('LOCK_SESSION_EXPIRED'));
      } else {
        const answer = await waiting;
        expect(text(answer.key)).toBe(text(key));
        // The header of the read that found no key ahead: the unlock's revision.
        expect(answer.header?.revision).toBe(released.header?.revision);
      }
      expect(await queue(server, 'l')).toEqual([]);
    });
  }
});
