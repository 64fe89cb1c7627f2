// The shared waiting primitive: lost-wakeup free from a read revision, compaction-safe, abortable,
// one watched key per waiter, own-key loss.
import { AbortedError, Etcd, op, type WatchRequest } from '@etcdkit/client';
import { describeEachBackend } from '@etcdkit/testkit';
import { afterAll, beforeAll, expect, it, vi } from 'vitest';
import { SessionExpiredError } from '../src/errors.js';
import { waitForPredecessors } from '../src/line/predecessors.js';
import { waitForDelete, waitForEvent } from '../src/wait.js';
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
    // The revision of the delete, or (the watch started in the past) of the read that saw it gone.
    const at = await waitForDelete(etcd, key, read.header.revision);
    expect(at).toBeGreaterThanOrEqual(deleted.header.revision);
    expect(at).toBeLessThanOrEqual((await etcd.range({ key })).header.revision);
  });

  it('waitForDelete from a revision the store moved past watches from now too, and misses nothing', async () => {
    const key = `${prefix()}k`;
    const created = await etcd.put(key, 'v');
    await etcd.put(`${prefix()}other`, 'x');
    const { etcd: spy, watches } = recording(etcd);
    const waiting = waitForDelete(spy, key, created.header.revision, {
      createRevision: created.header.revision,
    });
    // The watch from the past, then one from now (startRevision 0) with a read of the key.
    await vi.waitFor(
      () =>
        expect(watches.map((w) => w.startRevision ?? 0n)).toEqual([
          created.header.revision + 1n,
          0n,
        ]),
      {
        timeout: 5_000,
      },
    );
    expect(await stillPending(waiting, 150)).toBe(true);
    const deleted = await etcd.delete(key);
    expect(await waiting).toBe(deleted.header.revision);
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
    await etcd.put(`${p}a`, '');
    await etcd.put(`${p}b`, '');
    const c = await etcd.put(`${p}c`, '');
    const { etcd: spy, watches } = recording(etcd);
    const waiting = waitForPredecessors(spy, {
      prefix: p,
      createRevision: c.header.revision,
      ownKey: { key: `${p}c`, createRevision: c.header.revision, seenAt: c.header.revision },
    });
    const watched = () =>
      watches.map((w) =>
        w.range ? `${text(w.range.start)}..${text(w.range.end)}` : 'key' in w ? text(w.key) : '?',
      );
    // The read was cut short (a is ahead too): the newest key ahead alone, and the own key
    // apart. Polled rather than slept: a loaded machine may take longer.
    await vi.waitFor(() => expect(watched()).toEqual([`${p}c..${p}c\0`, `${p}b..${p}b\0`]), {
      timeout: 5_000,
    });
    expect(await stillPending(waiting, 50)).toBe(true);
    await etcd.delete(`${p}b`);
    // The read after b's delete finds a the only one left: one watch from a to c, whose events
    // come in revision order, tells both a's delete and our own key's (no read after it).
    await vi.waitFor(() => expect(watched()).toContain(`${p}a..${p}c\0`), { timeout: 5_000 });
    expect(await stillPending(waiting, 50)).toBe(true);
    const deletedA = await etcd.delete(`${p}a`);
    const header = await waiting;
    expect(header.revision).toBe(deletedA.header.revision);
    expect(watches.every((w) => !('prefix' in w && w.prefix !== undefined))).toBe(true);
  });

  // An own key outside the line waited on (an RWMutex reader: its key under read/, the writers
  // under write/) with one key ahead: one watch over the range from one to the other.
  const lastAhead = async (p: string) => {
    await etcd.put(`${p}w/a`, '');
    const mine = await etcd.put(`${p}r/c`, '');
    const read = await etcd.range({
      prefix: `${p}w/`,
      maxCreateRevision: mine.header.revision - 1n,
    });
    const own = {
      key: `${p}r/c`,
      createRevision: mine.header.revision,
      seenAt: read.header.revision,
    };
    const { etcd: spy, watches } = recording(etcd);
    const waiting = waitForPredecessors(spy, {
      prefix: `${p}w/`,
      createRevision: mine.header.revision,
      ownKey: own,
      ahead: { predecessors: read.kvs, complete: !read.more, header: read.header },
    });
    const first = () =>
      watches[0]?.range && [text(watches[0].range.start), text(watches[0].range.end)];
    await vi.waitFor(() => expect(first()).toEqual([`${p}r/c`, `${p}w/a\0`]), { timeout: 5_000 });
    return { waiting, mine };
  };

  it('waitForPredecessors with the own key outside the line: the own key deleted first fails, even if the other goes next', async () => {
    const p = `${prefix()}queue/`;
    const { waiting } = await lastAhead(p);
    expect(await stillPending(waiting, 50)).toBe(true);
    // Another key in the watched range is no turn.
    await etcd.put(`${p}s`, '');
    await etcd.delete(`${p}s`);
    expect(await stillPending(waiting, 50)).toBe(true);
    const failure = rejection(waiting);
    await etcd.delete(`${p}r/c`);
    await etcd.delete(`${p}w/a`);
    const error = await failure;
    expect(error).toBeInstanceOf(SessionExpiredError);
    expect((error as SessionExpiredError).key).toBe(`${p}r/c`);
  });

  it('waitForPredecessors with the own key outside the line: both deleted in one txn is a loss, not a turn', async () => {
    const p = `${prefix()}queue/`;
    const { waiting } = await lastAhead(p);
    const failure = rejection(waiting);
    await etcd
      .txn()
      .then(op.delete(`${p}w/a`), op.delete(`${p}r/c`))
      .commit();
    const error = await failure;
    expect(error).toBeInstanceOf(SessionExpiredError);
    expect((error as SessionExpiredError).key).toBe(`${p}r/c`);
  });

  it('waitForPredecessors with the own key outside the line: the delete of the only key ahead is the turn, at its revision', async () => {
    const p = `${prefix()}queue/`;
    const { waiting, mine } = await lastAhead(p);
    const deleted = await etcd.delete(`${p}w/a`);
    const header = await waiting;
    expect(header.revision).toBe(deleted.header.revision);
    expect(header.revision).toBeGreaterThan(mine.header.revision);
  });

  it('waitForPredecessors starts each watch of a key it read just after the revision it saw it at; in a long line, the key ahead from now', async () => {
    const p = `${prefix()}queue/`;
    await etcd.put(`${p}a`, '');
    await etcd.put(`${p}b`, '');
    const c = await etcd.put(`${p}c`, '');
    const predecessor = await etcd.get(`${p}b`);
    const { etcd: spy, watches } = recording(etcd);
    // From just after the revision read: etcd serves such a watch as events commit, not from its
    // 100 ms catch-up loop, and nothing after the read is missed.
    const waiting = waitForPredecessors(spy, {
      prefix: p,
      createRevision: c.header.revision,
      ownKey: { key: `${p}c`, createRevision: c.header.revision, seenAt: c.header.revision },
      ahead: { predecessors: predecessor ? [predecessor] : [], header: c.header },
    });
    waiting.catch(() => undefined);
    const fromRead = () => watches.filter((w) => (w.startRevision ?? 0n) > 0n);
    const rangeOf = (w: WatchRequest) => [
      w.range && text(w.range.start),
      w.range && text(w.range.end),
    ];
    // Not known to be the whole line: the own key alone from just after the read, and the key
    // ahead alone from now (the store did not move since the read: no read more).
    await vi.waitFor(() => expect(watches).toHaveLength(2), { timeout: 5_000 });
    expect(watches.map(rangeOf)).toEqual([
      [`${p}c`, `${p}c\0`],
      [`${p}b`, `${p}b\0`],
    ]);
    expect(watches.map((w) => w.startRevision ?? 0n)).toEqual([c.header.revision + 1n, 0n]);
    const deletedB = await etcd.delete(`${p}b`);
    await vi.waitFor(() => expect(fromRead()).toHaveLength(2), { timeout: 5_000 });
    // The read after b's delete found a the last one ahead, and watches from a to its own key
    // from just after that read.
    expect(rangeOf(fromRead()[1] as WatchRequest)).toEqual([`${p}a`, `${p}c\0`]);
    expect(fromRead()[1]?.startRevision).toBeGreaterThan(deletedB.header.revision);
    await etcd.delete(`${p}a`);
    await waiting;
  });

  it('waitForPredecessors fails when its read finds its own key re-created', async () => {
    const p = `${prefix()}queue/`;
    await etcd.put(`${p}a`, '');
    const mine = await etcd.put(`${p}b`, '');
    await etcd.delete(`${p}b`);
    const again = await etcd.put(`${p}b`, '');
    // Seen at a revision after the re-creation, so no watch replays the delete: the read of the
    // queue (with a still ahead) has to notice that b is another incarnation.
    const error = await rejection(
      waitForPredecessors(etcd, {
        prefix: p,
        createRevision: mine.header.revision,
        ownKey: {
          key: `${p}b`,
          createRevision: mine.header.revision,
          seenAt: again.header.revision,
        },
      }),
    );
    expect(error).toBeInstanceOf(SessionExpiredError);
    expect((error as SessionExpiredError).key).toBe(`${p}b`);
    expect(await etcd.get(`${p}a`)).toBeDefined();
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
    const { etcd: spy, watches } = recording(etcd);
    const waiting = waitForPredecessors(spy, {
      prefix: p,
      createRevision: mine.header.revision,
      slots: 2,
      ownKey: { key: `${p}d`, createRevision: mine.header.revision, seenAt: mine.header.revision },
    });
    expect(await stillPending(waiting, 50)).toBe(true);
    // One watch over every key ahead and the own key, not the prefix (made after the read, which
    // a loaded run may not have answered within the 50 ms above).
    await expect.poll(() => watches.length).toBeGreaterThan(0);
    const first = watches[0];
    expect(first?.range && [text(first.range.start), text(first.range.end)]).toEqual([
      `${p}a`,
      `${p}d\0`,
    ]);
    await etcd.delete(`${p}b`);
    expect(await stillPending(waiting, 100)).toBe(true);
    // The read had every key ahead: the second delete is the turn, at its revision.
    const deletedA = await etcd.delete(`${p}a`);
    expect((await waiting).revision).toBe(deletedA.header.revision);
  });

  it('waitForPredecessors with slots fails with SessionExpiredError when its own key goes', async () => {
    const p = `${prefix()}sem/`;
    await etcd.put(`${p}a`, '');
    await etcd.put(`${p}b`, '');
    const mine = await etcd.put(`${p}c`, '');
    const waiting = waitForPredecessors(etcd, {
      prefix: p,
      createRevision: mine.header.revision,
      slots: 2,
      ownKey: { key: `${p}c`, createRevision: mine.header.revision, seenAt: mine.header.revision },
    });
    const failure = rejection(waiting);
    await etcd.delete(`${p}c`);
    await etcd.delete(`${p}a`);
    const error = await failure;
    expect(error).toBeInstanceOf(SessionExpiredError);
    expect((error as SessionExpiredError).key).toBe(`${p}c`);
  });
});
