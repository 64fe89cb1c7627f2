// The client under the faults an embedded server injects (server.faults): what each one looks like
// from the client, and that the client's defences (retries, deadlines, stall detection, keepalive
// loss, typed errors) do what they promise.
import { EmbeddedEtcd, GrpcCode } from '@etcdkit/server-embedded';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  DeadlineExceededError,
  type EtcdError,
  NoSpaceError,
  OutcomeUnknownError,
} from '../src/errors.js';
import { Etcd } from '../src/etcd.js';
import type { LeaseLostError } from '../src/lease/lease-lost.js';
import { WatchCompactedError } from '../src/watch/errors.js';
import type { WatchStreamCloseEvent } from '../src/watch/types.js';

/** Resolves once `condition` holds, polling; fails after `timeoutMs`. */
async function until(condition: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

describe('the client under injected faults (embedded server)', () => {
  let server: EmbeddedEtcd;
  let etcd: Etcd;
  const streamCloses: WatchStreamCloseEvent[] = [];

  beforeEach(async () => {
    server = await EmbeddedEtcd.start({ minLeaseTtl: 1 });
    streamCloses.length = 0;
    etcd = new Etcd({
      endpoints: [...server.endpoints],
      watch: {
        progressIntervalMs: 200,
        stallTimeoutMs: 300,
        maxReconnectDelayMs: 100,
        hooks: { onStreamClose: (event) => streamCloses.push(event) },
      },
    });
  });
  afterEach(async () => {
    server.faults.clear();
    await etcd.close();
    await server.stop();
  });

  it('a put answered Unavailable is OutcomeUnknownError, applied or not', async () => {
    server.faults.failNext('Put', { code: GrpcCode.UNAVAILABLE });
    await expect(etcd.put('refused', '1')).rejects.toBeInstanceOf(OutcomeUnknownError);
    expect(await etcd.get('refused')).toBeUndefined();

    server.faults.failNext('Put', { code: GrpcCode.UNAVAILABLE, afterApply: true });
    await expect(etcd.put('applied', '1')).rejects.toBeInstanceOf(OutcomeUnknownError);
    expect((await etcd.get('applied'))?.text()).toBe('1');
  });

  it('a read answered Unavailable is retried and succeeds', async () => {
    await etcd.put('k', 'v');
    server.faults.failNext('Range', { code: GrpcCode.UNAVAILABLE, count: 2 });
    expect((await etcd.get('k'))?.text()).toBe('v');
  });

  it('a call delayed past its deadline is DeadlineExceededError', async () => {
    // Reads delayed far past any deadline here, puts not: the put gets a deadline a loaded machine
    // meets (150 ms is tight there), which a put delayed as reads are would still miss.
    server.faults.delay(60_000, 'Range');
    await expect(etcd.get('k', { timeoutMs: 150 })).rejects.toBeInstanceOf(DeadlineExceededError);
    await expect(etcd.put('k', 'v', { timeoutMs: 10_000 })).resolves.toBeDefined();
  });

  it('a paused server stalls the watch stream: it is replaced, and the watcher resumes', async () => {
    const watcher = etcd.watch({ key: 'w' });
    const values: string[] = [];
    watcher.on('put', (event) => values.push(event.kv.text()));
    await watcher.ready();
    await etcd.put('w', 'before');
    await until(() => values.length === 1, 'the first event');
    server.faults.pause();
    await until(() => streamCloses.some((e) => e.reason === 'stall'), 'a stalled stream');
    server.faults.resume();
    await etcd.put('w', 'after');
    await until(() => values.length === 2, 'the event after the pause');
    expect(values).toEqual(['before', 'after']);
    watcher.close();
  });

  it('a paused server makes a kept-alive lease report its loss (timeout)', async () => {
    const lease = (await etcd.lease.grant(1)).keepAlive();
    const lost = lease.lost;
    server.faults.pause();
    const error: LeaseLostError = await lost;
    expect(error.reason).toBe('timeout');
    server.faults.resume();
  });

  it('a leader change shows in the raft term of response headers', async () => {
    expect((await etcd.put('k', '1')).header.raftTerm).toBe(2n);
    server.faults.changeLeader();
    expect((await etcd.put('k', '2')).header.raftTerm).toBe(3n);
    expect((await etcd.maintenance.status()).raftTerm).toBe(3n);
  });

  it('NOSPACE fails writes and grants with NoSpaceError; reads go on', async () => {
    await etcd.put('k', 'v');
    server.faults.raiseNoSpace();
    await expect(etcd.put('k', 'w')).rejects.toBeInstanceOf(NoSpaceError);
    await expect(etcd.lease.grant(10)).rejects.toBeInstanceOf(NoSpaceError);
    expect((await etcd.get('k'))?.text()).toBe('v');
    expect((await etcd.maintenance.alarms()).map((a) => a.type)).toEqual(['NOSPACE']);
  });

  it('a compaction past a disconnected watcher ends it with WatchCompactedError', async () => {
    const watcher = etcd.watch({ key: 'c' });
    const errors: EtcdError[] = [];
    watcher.on('error', (error) => errors.push(error));
    await watcher.ready();
    await etcd.put('c', '1');
    // While the server answers nothing, history moves on and is compacted; then the connection
    // drops and the watcher comes back asking for revisions that are gone.
    server.faults.pause();
    for (const value of ['2', '3']) {
      const write = server.store.write();
      write.put(Buffer.from('c'), Buffer.from(value), 0n);
      write.end();
    }
    server.faults.compact(server.store.revision);
    server.faults.dropConnections();
    server.faults.resume();
    await until(() => errors.length > 0, 'the watcher to fail');
    expect(errors[0]).toBeInstanceOf(WatchCompactedError);
    expect((errors[0] as WatchCompactedError).compactRevision).toBe(4n);
  });

  it('a lease expired by the server is reported lost (expired), its keys gone', async () => {
    const lease = (await etcd.lease.grant(5)).keepAlive();
    await etcd.put('owned', 'x', { lease: lease.id });
    expect(server.faults.expireLease(lease.id)).toBe(true);
    expect((await lease.lost).reason).toBe('expired');
    expect(await etcd.get('owned')).toBeUndefined();
  });
});
