// The shared waiting primitive: lost-wakeup free from a read revision, compaction-safe, abortable,
// one watched key per waiter, own-key loss.
import { AbortedError, Etcd } from '@etcdkit/client';
import { describeEachBackend } from '@etcdkit/testkit';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { SessionExpiredError } from '../src/errors.js';
import { waitForDelete, waitForEvent, waitForPredecessors } from '../src/wait.js';
import { recording, rejection, stillPending } from './recipes-support.js';

const text = (bytes: string | Uint8Array | undefined) =>
  typeof bytes === 'string' ? bytes : new TextDecoder().decode(bytes);

describeEachBackend('wait primitives', ({ backend, prefix }) => {
  let etcd: Etcd;
  beforeAll(() => {
    etcd = new Etcd({ endpoints: backend().endpoints });
  });
  afterAll(() => etcd?.close());

  it('waitForDelete sees a delete that happened after the read, before the wait', async () => {
    const key = `${prefix()}k`;
    await etcd.put(key, 'v');
    const read = await etcd.range({ key });
    const deleted = await etcd.delete(key);
    expect(await waitForDelete(etcd, key, read.header.revision)).toBe(deleted.header.revision);
  });

  it('waitForDelete survives a compacted start revision', async () => {
    const key = `${prefix()}k`;
    const created = await etcd.put(key, 'v');
    await etcd.put(`${prefix()}other`, 'x');
    const compactAt = (await etcd.put(`${prefix()}other`, 'y')).header.revision;
    await etcd.compact(compactAt);
    const waiting = waitForDelete(etcd, key, created.header.revision, {
      createRevision: created.header.revision,
    });
    expect(await stillPending(waiting, 100)).toBe(true);
    const deleted = await etcd.delete(key);
    expect(await waiting).toBe(deleted.header.revision);

    // Deleted and re-created before the compaction: the incarnation waited on is gone.
    const first = await etcd.put(key, 'v1');
    await etcd.delete(key);
    await etcd.put(key, 'v2');
    const now = (await etcd.put(`${prefix()}other`, 'z')).header.revision;
    await etcd.compact(now);
    const done = await waitForDelete(etcd, key, first.header.revision, {
      createRevision: first.header.revision,
    });
    expect(done).toBeGreaterThanOrEqual(now);
  });

  it('waitForEvent returns the first put on a prefix, and aborts cleanly', async () => {
    const p = `${prefix()}q/`;
    const from = (await etcd.range({ prefix: p })).header.revision + 1n;
    const put = await etcd.put(`${p}a`, '1');
    const event = await waitForEvent(etcd, { prefix: p }, 'put', from);
    expect(event.kv.keyText()).toBe(`${p}a`);
    expect(event.kv.modRevision).toBe(put.header.revision);

    const controller = new AbortController();
    const waiting = waitForEvent(etcd, { key: `${p}never` }, 'put', 0n, {
      signal: controller.signal,
    });
    controller.abort();
    expect(await rejection(waiting)).toBeInstanceOf(AbortedError);
  });

  it('waitForPredecessors watches only the newest predecessor and its own key', async () => {
    const p = `${prefix()}queue/`;
    const a = await etcd.put(`${p}a`, '');
    await etcd.put(`${p}b`, '');
    const c = await etcd.put(`${p}c`, '');
    const { etcd: spy, watches } = recording(etcd);
    const waiting = waitForPredecessors(spy, {
      prefix: p,
      createRevision: c.header.revision,
      ownKey: { key: `${p}c`, createRevision: c.header.revision, seenAt: c.header.revision },
    });
    const watched = () => watches.map((w) => ('key' in w ? text(w.key) : '?'));
    // Poll for the watches rather than sleeping a fixed time: a loaded machine may take longer.
    await vi.waitFor(() => expect(new Set(watched())).toEqual(new Set([`${p}b`, `${p}c`])), {
      timeout: 5_000,
    });
    expect(await stillPending(waiting, 50)).toBe(true);
    await etcd.delete(`${p}b`);
    await vi.waitFor(() => expect(watched()).toContain(`${p}a`), { timeout: 5_000 });
    expect(await stillPending(waiting, 50)).toBe(true);
    await etcd.delete(`${p}a`);
    const header = await waiting;
    expect(header.revision).toBeGreaterThan(a.header.revision);
    expect(watches.every((w) => !('prefix' in w && w.prefix !== undefined))).toBe(true);
  });

  it('waitForPredecessors fails with SessionExpiredError when its own key goes', async () => {
    const p = `${prefix()}queue/`;
    await etcd.put(`${p}a`, '');
    const mine = await etcd.put(`${p}b`, '');
    const waiting = waitForPredecessors(etcd, {
      prefix: p,
      createRevision: mine.header.revision,
      ownKey: { key: `${p}b`, createRevision: mine.header.revision, seenAt: mine.header.revision },
    });
    // Observe the rejection before causing it, so it is never momentarily unhandled.
    const failure = rejection(waiting);
    await etcd.delete(`${p}b`);
    expect(await failure).toBeInstanceOf(SessionExpiredError);
  });

  it('waitForPredecessors with slots admits when enough predecessors go, whichever they are', async () => {
    const p = `${prefix()}sem/`;
    await etcd.put(`${p}a`, '');
    await etcd.put(`${p}b`, '');
    await etcd.put(`${p}c`, '');
    const mine = await etcd.put(`${p}d`, '');
    const waiting = waitForPredecessors(etcd, {
      prefix: p,
      createRevision: mine.header.revision,
      slots: 2,
    });
    expect(await stillPending(waiting, 50)).toBe(true);
    await etcd.delete(`${p}b`);
    expect(await stillPending(waiting, 100)).toBe(true);
    await etcd.delete(`${p}a`);
    await waiting;
  });
});
