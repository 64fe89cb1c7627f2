// The server-side Lock service (etcd.lock) against every backend: blocking, FIFO order, the key
// that exists exactly while held, release by unlock and by lease revoke, cancellation, errors.
import { describeEachBackend } from '@etcdkit/testkit';
import { afterAll, afterEach, beforeAll, expect, it } from 'vitest';
import { toText } from '../../src/bytes.js';
import { type LockAcquired, lockKey } from '../../src/election/lock.js';
import {
  AbortedError,
  DeadlineExceededError,
  LeaseNotFoundError,
  LockSessionExpiredError,
  OutcomeUnknownError,
} from '../../src/errors.js';
import { Etcd } from '../../src/etcd.js';
import type { Lease } from '../../src/lease/lease.js';
import { GrpcStatus } from '../../src/transport/types.js';
import { expectServerError, rejection } from '../kv/kv-support.js';
import { eventually, keysInLine, settlement, sleep } from './lock-election-support.js';

describeEachBackend('LockClient (server-side Lock service)', ({ backend, prefix }) => {
  let etcd: Etcd;
  const leases: Lease[] = [];
  const lockName = () => `${prefix()}lock`;

  /** A lease for one test, revoked after it (which releases whatever it still holds). */
  async function lease(ttl = 30): Promise<Lease> {
    const granted = await etcd.lease.grant(ttl);
    leases.push(granted);
    return granted;
  }

  /** The lock's queue: its keys in create-revision order, relative to the lock name. */
  const queue = (): Promise<string[]> => keysInLine(etcd, lockName());

  const hex = (held: Lease) => held.id.toString(16);
  const keyText = (acquired: LockAcquired) => toText(acquired.key);

  beforeAll(() => {
    etcd = new Etcd({ endpoints: backend().endpoints });
  });
  afterEach(async () => {
    for (const held of leases.splice(0)) await held.revoke().catch(() => {});
  });
  afterAll(async () => {
    await etcd?.close();
  });

  it('grants a free lock at once with the key name/<lease hex>, which exists exactly while held', async () => {
    const owner = await lease();
    const acquired = await etcd.lock.lock(lockName(), { lease: owner });
    expect(keyText(acquired)).toBe(`${lockName()}/${hex(owner)}`);
    expect(acquired.key).toEqual(lockKey(lockName(), owner));
    const kv = await etcd.get(acquired.key);
    expect(kv).toMatchObject({ lease: owner.id, value: new Uint8Array(0) });
    // A free lock is taken by the txn that queues the key: its revision is the header's.
    expect(kv?.createRevision).toBe(acquired.header.revision);
    const released = await etcd.lock.unlock(acquired.key);
    expect(released.header.revision).toBe(acquired.header.revision + 1n);
    expect(await etcd.get(acquired.key)).toBeUndefined();
  });

  it('blocks while another lease holds the lock and is granted when it is unlocked', async () => {
    const [first, second] = [await lease(), await lease()];
    const held = await etcd.lock.lock(lockName(), { lease: first });
    const waiting = etcd.lock.lock(lockName(), { lease: second });
    await eventually(async () => (await queue()).length === 2);
    await sleep(200);
    expect(await settlement(waiting)).toBe('pending');
    // Queued, not holding: the holder is still the oldest key.
    expect(await queue()).toEqual([hex(first), hex(second)]);

    const unlocked = await etcd.lock.unlock(held.key);
    const granted = await waiting;
    expect(keyText(granted)).toBe(`${lockName()}/${hex(second)}`);
    // Granted by the read that found the predecessor gone: at or after the unlock.
    expect(granted.header.revision).toBeGreaterThanOrEqual(unlocked.header.revision);
    expect(await queue()).toEqual([hex(second)]);
  });

  it('grants waiters one at a time in the order they queued (FIFO), with growing create revisions', async () => {
    const owners = [await lease(), await lease(), await lease(), await lease()];
    const first = await etcd.lock.lock(lockName(), { lease: owners[0] });
    const granted: number[] = [];
    const waiters = owners.slice(1).map((owner, index) => ({ owner, index: index + 1 }));
    const pending = new Map<number, Promise<LockAcquired>>();
    for (const { owner, index } of waiters) {
      pending.set(
        index,
        etcd.lock.lock(lockName(), { lease: owner }).then((acquired) => {
          granted.push(index);
          return acquired;
        }),
      );
      // Queue them one after the other, so their order is known.
      await eventually(async () => (await queue()).includes(hex(owner)));
    }
    expect(await queue()).toEqual(owners.map(hex));

    let holderKey = first.key;
    const tokens = [(await etcd.get(first.key))?.createRevision ?? 0n];
    for (let index = 1; index < owners.length; index++) {
      await sleep(100);
      expect(granted).toEqual(Array.from({ length: index - 1 }, (_, i) => i + 1));
      await etcd.lock.unlock(holderKey);
      const acquired = await (pending.get(index) as Promise<LockAcquired>);
      expect(keyText(acquired)).toBe(`${lockName()}/${hex(owners[index] as Lease)}`);
      // At most one holder: the granted key is the oldest one left.
      expect((await queue())[0]).toBe(hex(owners[index] as Lease));
      tokens.push((await etcd.get(acquired.key))?.createRevision ?? 0n);
      holderKey = acquired.key;
    }
    expect(granted).toEqual([1, 2, 3]);
    expect([...tokens].sort((a, b) => (a < b ? -1 : 1))).toEqual(tokens);
    expect(new Set(tokens).size).toBe(tokens.length);
  });

  it('is released when the holder lease is revoked: its key goes and the next waiter gets it', async () => {
    const [first, second] = [await lease(), await lease()];
    const held = await etcd.lock.lock(lockName(), { lease: first });
    const waiting = etcd.lock.lock(lockName(), { lease: second });
    await eventually(async () => (await queue()).length === 2);
    await first.revoke();
    const granted = await waiting;
    expect(keyText(granted)).toBe(`${lockName()}/${hex(second)}`);
    expect(await etcd.get(held.key)).toBeUndefined();
  });

  it('aborting a waiting lock fails it with OutcomeUnknownError (the abort as cause) and the server deletes its queued key', async () => {
    const [first, second] = [await lease(), await lease()];
    await etcd.lock.lock(lockName(), { lease: first });
    const controller = new AbortController();
    const waiting = etcd.lock.lock(lockName(), { lease: second, signal: controller.signal });
    await eventually(async () => (await queue()).length === 2);
    const reason = new Error('gave up');
    controller.abort(reason);
    // The call was sent: it may have taken the lock just before the abort, as a deadline.
    const error = await rejection(waiting);
    expect(error).toBeInstanceOf(OutcomeUnknownError);
    const aborted = (error as OutcomeUnknownError).cause;
    expect(aborted).toBeInstanceOf(AbortedError);
    expect((aborted as AbortedError).cause).toBe(reason);
    // The server notices the cancelled call and withdraws the waiter (etcd does it just after).
    await eventually(async () => (await queue()).length === 1);
    expect(await queue()).toEqual([hex(first)]);
  });

  it('a deadline while waiting is OutcomeUnknownError (DeadlineExceeded) and leaves no queued key', async () => {
    const [first, second] = [await lease(), await lease()];
    await etcd.lock.lock(lockName(), { lease: first });
    const error = await rejection(etcd.lock.lock(lockName(), { lease: second, timeoutMs: 300 }));
    expect(error).toBeInstanceOf(OutcomeUnknownError);
    expect((error as OutcomeUnknownError).cause).toBeInstanceOf(DeadlineExceededError);
    await eventually(async () => (await queue()).length === 1);
    expect(await queue()).toEqual([hex(first)]);
  });

  it('locking again with the lease that holds the lock returns the same key at once, writing nothing', async () => {
    const owner = await lease();
    const first = await etcd.lock.lock(lockName(), { lease: owner });
    const again = await etcd.lock.lock(lockName(), { lease: owner });
    expect(again.key).toEqual(first.key);
    expect(again.header.revision).toBe(first.header.revision);
  });

  it('without a lease, the server grants a 60 s lease that the key is attached to', async () => {
    const acquired = await etcd.lock.lock(lockName());
    const kv = await etcd.get(acquired.key);
    expect(kv).toBeDefined();
    const granted = await etcd.lease.timeToLive(kv?.lease ?? 0n);
    expect(granted.grantedTtl).toBe(60n);
    expect(keyText(acquired)).toBe(`${lockName()}/${(kv?.lease ?? 0n).toString(16)}`);
    await etcd.lease.revoke(kv?.lease ?? 0n);
    expect(await etcd.get(acquired.key)).toBeUndefined();
  });

  it('an unknown lease fails with LeaseNotFoundError (sent with status Unknown) and queues nothing', async () => {
    const error = await rejection(etcd.lock.lock(lockName(), { lease: 0x7fff_ffffn }));
    expectServerError(error, LeaseNotFoundError);
    expect((error as LeaseNotFoundError).grpcStatus).toBe(GrpcStatus.Unknown);
    expect(await queue()).toEqual([]);
  });

  it('unlocking a key that does not exist is not an error and writes nothing', async () => {
    const before = (await etcd.range({ key: lockName(), countOnly: true })).header.revision;
    const released = await etcd.lock.unlock(`${lockName()}/missing`);
    expect(released.header.revision).toBe(before);
  });

  it('a waiter whose key vanishes waits for its turn: etcd 3.5 on then fails with LockSessionExpiredError, 3.4 reports it held', async () => {
    // The server says which version's answer it owes (etcd issue 11456 was fixed in 3.5; the
    // embedded server answers as the version it was started as).
    const { version } = await etcd.maintenance.status();
    const [first, second] = [await lease(), await lease()];
    const held = await etcd.lock.lock(lockName(), { lease: first });
    const waiting = etcd.lock.lock(lockName(), { lease: second });
    waiting.catch(() => {});
    await eventually(async () => (await queue()).length === 2);
    await second.revoke();
    // etcd waits on until the holder is gone; then 3.4 answers with a key that no longer exists,
    // 3.5 and later with LockSessionExpiredError.
    await sleep(300);
    expect(await settlement(waiting)).toBe('pending');
    await etcd.lock.unlock(held.key);
    if (version.startsWith('3.4.')) {
      const granted = await waiting;
      expect(await etcd.get(granted.key)).toBeUndefined();
    } else {
      expectServerError(await rejection(waiting), LockSessionExpiredError);
    }
    expect(await queue()).toEqual([]);
  });
});
