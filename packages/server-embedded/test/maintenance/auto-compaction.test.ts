// Auto-compaction on a virtual clock, with etcd's timing for both modes.
import { afterEach, describe, expect, it } from 'vitest';
import { EmbeddedEtcd } from '../../src/index.js';
import type { VirtualClock } from '../../src/virtual-clock.js';

const MINUTE = 60_000;
const HOUR = 60 * MINUTE;

describe('auto-compaction', () => {
  let server: (EmbeddedEtcd & { readonly clock: VirtualClock }) | undefined;
  afterEach(async () => {
    await server?.stop();
    server = undefined;
  });

  function put(target: EmbeddedEtcd, count: number): void {
    for (let i = 0; i < count; i++) {
      const write = target.store.write();
      write.put(Buffer.from(`k${i % 3}`), Buffer.from('v'), 0n);
      write.end();
    }
  }

  it('revision mode compacts to current - retention every 5 minutes', async () => {
    server = await EmbeddedEtcd.start({
      clock: 'virtual',
      autoCompaction: { mode: 'revision', retention: 10 },
    });
    put(server, 30); // revision 31
    await server.clock.advance(5 * MINUTE - 1);
    expect(server.store.compactRevision).toBe(-1);
    await server.clock.advance(1);
    expect(server.store.compactRevision).toBe(21);
    put(server, 5); // revision 36
    await server.clock.advance(5 * MINUTE);
    expect(server.store.compactRevision).toBe(26);
  });

  it('revision mode does nothing while current - retention is not positive', async () => {
    server = await EmbeddedEtcd.start({
      clock: 'virtual',
      autoCompaction: { mode: 'revision', retention: 100 },
    });
    put(server, 30);
    await server.clock.advance(15 * MINUTE);
    expect(server.store.compactRevision).toBe(-1);
  });

  it('periodic mode compacts, once per period, to the revision of one period ago', async () => {
    server = await EmbeddedEtcd.start({
      clock: 'virtual',
      autoCompaction: { mode: 'periodic', retentionMs: 10 * MINUTE },
    });
    // The revision is sampled at the start (1) and then every minute, a tenth of the period.
    await server.clock.advance(MINUTE / 2);
    put(server, 4); // revision 5 from 0:00:30
    await server.clock.advance(10 * MINUTE - MINUTE / 2 - 1);
    expect(server.store.compactRevision).toBe(-1);
    await server.clock.advance(1); // 0:10: the revision at the start
    expect(server.store.compactRevision).toBe(1);
    put(server, 4); // revision 9 from 0:10
    await server.clock.advance(9 * MINUTE); // 0:19: not again within the period
    expect(server.store.compactRevision).toBe(1);
    await server.clock.advance(MINUTE); // 0:20: the revision of 0:09
    expect(server.store.compactRevision).toBe(5);
    await server.clock.advance(10 * MINUTE); // 0:30: the revision of 0:19
    expect(server.store.compactRevision).toBe(9);
  });

  it('periodic mode over an hour waits one period, then compacts every hour', async () => {
    server = await EmbeddedEtcd.start({
      clock: 'virtual',
      autoCompaction: { mode: 'periodic', retentionMs: 2 * HOUR },
    });
    // One write every 6 minutes (the sampling interval): at minute 6n the revision is n + 1.
    const compactedAt = new Map<number, number>();
    for (let step = 1; step <= 31; step++) {
      put(server, 1);
      await server.clock.advance(6 * MINUTE);
      compactedAt.set(step * 6, server.store.compactRevision);
    }
    expect(compactedAt.get(114)).toBe(-1);
    // 2:00, the first period: the revision sampled at the start.
    expect(compactedAt.get(120)).toBe(1);
    expect(compactedAt.get(174)).toBe(1);
    // 3:00, an hour later: the oldest of the samples kept, from 0:54 (revision 10).
    expect(compactedAt.get(180)).toBe(10);
  });

  it('a compaction already done by hand counts as done', async () => {
    server = await EmbeddedEtcd.start({
      clock: 'virtual',
      autoCompaction: { mode: 'revision', retention: 1 },
    });
    put(server, 10);
    server.store.compact(10);
    await server.clock.advance(5 * MINUTE);
    expect(server.store.compactRevision).toBe(10);
  });
});
