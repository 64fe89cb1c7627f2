// The lease-expiry fault: the embedded server's virtual clock jumps past every lease's TTL while a
// lock holder is in its critical section, which runs on (slower, never paused): the holder loses
// the lock without knowing, as after a long GC pause or a slow disk.
import { Etcd } from '@etcdkit/client';
import { describe, expect, it } from 'vitest';
import { FaultUnavailableError } from '../src/errors.js';
import { startTarget, type TargetSpec } from '../src/target.js';
import { verify } from '../src/verify.js';
import { lockWorkload } from '../src/workloads/lock-workload.js';
import { expectLostIncrement, refusedIncrements } from './lock-checks.js';

const RUN = {
  workload: 'lock',
  clients: 3,
  durationMs: 8_000,
  faults: ['lease-expiry'],
  faultIntervalMs: 300,
} as const;
const TIMEOUT = 120_000;

describe.each<[string, TargetSpec]>([
  ['embedded', { kind: 'embedded' }],
  ['embedded x3', { kind: 'embedded', members: 3 }],
])('lock-guarded counter with leases expired by virtual time [%s]', (_, target) => {
  it('unfenced: the holder writes after its lease expired and an increment is lost', {
    timeout: TIMEOUT,
  }, async () => {
    const result = await verify({ ...RUN, target, fenced: false });
    expect(result.target).toContain('virtual clock');
    expect(result.faults.filter((f) => f.name === 'lease-expiry').length).toBeGreaterThanOrEqual(1);
    expect(result.faults.every((f) => f.name === 'lease-expiry' && f.error === undefined)).toBe(
      true,
    );
    expect(result.valid).toBe(false);
    expectLostIncrement(result);
  });

  it('fenced with Hold.txn: the stale holder is refused and the counter is right', {
    timeout: TIMEOUT,
  }, async () => {
    const result = await verify({ ...RUN, target, fenced: true });
    expect(result.faults.filter((f) => f.name === 'lease-expiry').length).toBeGreaterThanOrEqual(1);
    expect(result.anomalies).toEqual([]);
    expect(result.valid).toBe(true);
    expect(refusedIncrements(result)).toBeGreaterThanOrEqual(1);
  });
});

describe('the lease-expiry fault', () => {
  it.each<[string, TargetSpec]>([
    ['embedded', { kind: 'embedded', virtualClock: true }],
    ['embedded x3', { kind: 'embedded', members: 3, virtualClock: true }],
  ])('expires every lease at once on a virtual clock [%s]', async (_, spec) => {
    const target = await startTarget(spec);
    const etcd = new Etcd({ endpoints: [...target.endpoints] });
    try {
      const idle = await etcd.lease.grant(30);
      const kept = await etcd.lease.grant(5, { keepAlive: true });
      await etcd.put('lease-expiry/idle', 'x', { lease: idle });
      await etcd.put('lease-expiry/kept', 'x', { lease: kept });
      const heal = await target.faults['lease-expiry']!();
      await heal();
      expect((await etcd.lease.timeToLive(idle.id)).ttl).toBe(-1n);
      expect((await etcd.lease.timeToLive(kept.id)).ttl).toBe(-1n);
      expect((await etcd.range({ prefix: 'lease-expiry/' })).kvs).toEqual([]);
      // The kept-alive handle learns it from its next keepalive: the server says TTL 0.
      expect((await kept.lost).reason).toBe('expired');
      const fresh = await etcd.lease.grant(30);
      // Rounded down, as etcd does: 29 right after a grant of 30.
      expect((await etcd.lease.timeToLive(fresh.id)).ttl).toBe(29n);
    } finally {
      await etcd.close();
      await target.stop();
    }
  });

  it('is not offered on the real clock', async () => {
    const target = await startTarget({ kind: 'embedded' });
    await target.stop();
    expect(target.faults['lease-expiry']).toBeUndefined();
    expect(target.expireLeases).toBeUndefined();
  });

  it('is refused with a typed error by the lock workload on a target without a virtual clock', async () => {
    const target = await startTarget({ kind: 'embedded' });
    try {
      const run = lockWorkload(target, {
        prefix: 'lease-expiry/',
        durationMs: 1_000,
        clients: 1,
        fenced: false,
        clientPauses: false,
        leaseExpiry: true,
        faults: ['lease-expiry'],
      });
      await expect(run).rejects.toThrow(FaultUnavailableError);
      await expect(run).rejects.toThrow(
        'lease-expiry needs an embedded target on a virtual clock (--embedded), not embedded server',
      );
    } finally {
      await target.stop();
    }
  });
});
