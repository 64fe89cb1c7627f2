// The order a revision's events leave in across watchers: newest watcher first, so that a waiter
// on a released key is written to before the holder's own watch of it (watchable-store.ts).
import { describe, expect, it } from 'vitest';
import { b } from '../support/bytes.js';
import { type FakeCall, Harness } from './stream-harness.js';

/** Records, across calls, which one was written to, in order. */
function recordWrites(calls: Record<string, FakeCall>): string[] {
  const order: string[] = [];
  for (const [name, call] of Object.entries(calls)) {
    const write = call.write.bind(call);
    call.write = (message) => {
      if ((message.events?.length ?? 0) > 0) order.push(name);
      return write(message);
    };
  }
  return order;
}

describe('delivery order across watchers', () => {
  it('sends a revision to the newest watcher first, whatever the key ranges', () => {
    const harness = new Harness();
    const holder = harness.open();
    const waiter = harness.open();
    const observer = harness.open();
    // The holder's range starts before the waiter's: a range-ordered walk would find it first.
    harness.create(holder.stream, { key: b('lock/'), rangeEnd: b('lock0') });
    harness.create(waiter.stream, { key: b('lock/a'), rangeEnd: b('lock/c') });
    harness.create(observer.stream, { key: b('lock/b') });
    const order = recordWrites({
      holder: holder.call,
      waiter: waiter.call,
      observer: observer.call,
    });
    harness.put('lock/b', 'held');
    harness.del('lock/b');
    expect(order).toEqual(['observer', 'waiter', 'holder', 'observer', 'waiter', 'holder']);
    // Each watcher still gets every revision, in revision order.
    for (const { call } of [holder, waiter, observer]) {
      const events = call.take().map((r) => r.events?.map((e) => `${e.type} ${e.kv?.key}`));
      expect(events).toEqual([undefined, ['PUT lock/b'], ['DELETE lock/b']]);
    }
    harness.close();
  });

  it('keeps creation order meaningful on one stream: the later watch of the stream goes first', () => {
    const harness = new Harness();
    const { stream, call } = harness.open();
    harness.create(stream, { key: b('k') });
    harness.create(stream, { key: b('k') });
    call.take();
    harness.put('k', 'v');
    expect(call.take().map((r) => r.watchId)).toEqual([1, 0]);
    harness.close();
  });
});
