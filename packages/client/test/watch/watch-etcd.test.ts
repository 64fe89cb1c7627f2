// Watch behaviour that needs etcd started with particular flags: progress notifications (which
// keep a quiet watcher's resume point fresh), and responses large enough to be fragmented. (Watch
// with auth and expiring tokens is in watch-auth.test.ts, on both backends.)
import { describeRealEtcd, type EtcdProcess, startEtcd, startTcpProxy } from '@etcdkit/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Etcd } from '../../src/etcd.js';
import { KV } from '../../src/kv/kv.js';
import { WatchCompactedError } from '../../src/watch/errors.js';
import type { WatchProgress } from '../../src/watch/types.js';
import { describeEvents, recordingRpc, takeEvents, waitFor } from './watch-support.js';

describeRealEtcd('watch progress (--experimental-watch-progress-notify-interval=200ms)', () => {
  let server: EtcdProcess;

  beforeAll(async () => {
    server = await startEtcd({ args: ['--experimental-watch-progress-notify-interval=200ms'] });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('progress notifications advance a quiet watcher, so it resumes past a compaction; without them it cannot', async () => {
    const proxy = await startTcpProxy(server.endpoint);
    const writer = new Etcd({ endpoints: [server.endpoint] });
    const watching = new Etcd({ endpoints: [proxy.endpoint] });
    try {
      const notified = watching.watch({ key: 'quiet/a', progressNotify: true });
      const silent = watching.watch({ key: 'quiet/b' });
      const progress: WatchProgress[] = [];
      notified.on('progress', (p) => progress.push(p));
      const silentFailure = new Promise<unknown>((resolve) => silent.on('error', resolve));
      let resumed = 0;
      notified.on('resumed', () => resumed++);
      const created = await notified.ready();
      await silent.ready();
      let current = created;
      for (let i = 0; i < 5; i++) current = (await writer.put('busy', `${i}`)).header.revision;
      await waitFor(
        () => notified.revision === current,
        10_000,
        `a progress notification at ${current}`,
      );
      expect(progress.at(-1)?.revision).toBe(current);
      expect(progress.at(-1)?.header.revision).toBe(current);
      expect(silent.revision).toBe(created);
      await writer.compact(current, { physical: true });
      proxy.cutAll();
      // The notified watcher resumes from current + 1, above the compaction.
      await waitFor(() => resumed === 1, 10_000, 'the notified watcher to resume');
      const r = (await writer.put('quiet/a', 'x')).header.revision;
      expect(describeEvents(await takeEvents(notified[Symbol.asyncIterator](), 1))).toEqual([
        `${r} put quiet/a=x`,
      ]);
      // The other one only knows it saw everything up to its creation: that was compacted away.
      const failure = await silentFailure;
      expect(failure).toBeInstanceOf(WatchCompactedError);
      expect(failure).toMatchObject({ compactRevision: current, startRevision: created + 1n });
      await notified.close();
    } finally {
      await watching.close();
      await writer.close();
      await proxy.close();
    }
  }, 30_000);

  it('answers to the stream liveness probes count as progress for caught-up watchers', async () => {
    const writer = new Etcd({ endpoints: [server.endpoint] });
    const watching = new Etcd({
      endpoints: [server.endpoint],
      watch: { progressIntervalMs: 100, stallTimeoutMs: 2_000 },
    });
    try {
      const watcher = watching.watch({ key: 'probe/quiet' });
      const progress: bigint[] = [];
      watcher.on('progress', (p) => progress.push(p.revision));
      await watcher.ready();
      let current = 0n;
      for (let i = 0; i < 3; i++)
        current = (await writer.put('probe/busy', `${i}`)).header.revision;
      await waitFor(() => watcher.revision === current, 5_000, `progress at ${current}`);
      expect(progress).toContain(current);
      await watcher.close();
    } finally {
      await watching.close();
      await writer.close();
    }
  });
});

describeRealEtcd('watch fragments (--max-request-bytes=4096)', () => {
  let server: EtcdProcess;

  beforeAll(async () => {
    server = await startEtcd({ args: ['--max-request-bytes=4096'] });
  });
  afterAll(async () => {
    await server?.stop();
  });

  it('a response over the server limit arrives in fragments and is delivered whole, one batch per revision', async () => {
    const etcd = new Etcd({ endpoints: [server.endpoint] });
    const { rpc, wire } = recordingRpc(etcd.connection);
    try {
      const value = (i: number) => `${i}`.padStart(3_000, '.');
      const revisions: bigint[] = [];
      for (let i = 0; i < 200; i++)
        revisions.push((await etcd.put('big', value(i))).header.revision);
      // History replay of 200 revisions with prevKv: about 1.2 MB in one response, over the
      // 4 KiB + 512 KiB the server sends in one message.
      const watcher = new KV(rpc).watch({ key: 'big', startRevision: revisions[0]!, prevKv: true });
      const batches = await takeEvents(watcher[Symbol.asyncIterator](), 200, 20_000);
      const fragments = wire.responses.filter((r) => r.fragment).length;
      expect(fragments).toBeGreaterThanOrEqual(1);
      expect(batches.map((b) => b.revision)).toEqual(revisions);
      expect(batches.every((b) => b.events.length === 1)).toBe(true);
      batches.forEach((batch, i) => {
        const event = batch.events[0]!;
        expect(event.kv.text()).toBe(value(i));
        expect(event.prevKv?.text()).toBe(i === 0 ? undefined : value(i - 1));
      });
      console.info(
        `[watch fragments] ${wire.responses.length} responses, ${fragments} marked as fragments`,
      );
      await watcher.close();
    } finally {
      await etcd.close();
    }
  });
});
