// A channel's deadline and abort watches (one timer, one listener per signal for many calls): a
// deadline still fires on time after the watch sat idle with its timer kept, the kept timer never
// holds the process, and a signal's listener goes with its last call unless the calls say the
// signal outlives them (the client's closing signal), until the channel stops the watch.
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { type AbortableCall, AbortWatch } from '../../src/transport/abort-watch.js';
import { DeadlineWatch } from '../../src/transport/deadline-watch.js';
import { GrpcStatus, type TransportError } from '../../src/transport/types.js';

class FakeCall implements AbortableCall {
  readonly sent = true;
  readonly aborted: Array<{ error: TransportError; at: number }> = [];
  abort(error: TransportError): void {
    this.aborted.push({ error, at: Date.now() });
  }
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const listeners = (signal: AbortSignal) => getEventListeners(signal, 'abort').length;
/** The active timers of this process (Node's resource report). */
const timers = () => process.getActiveResourcesInfo().filter((r) => r === 'Timeout').length;

describe('DeadlineWatch', () => {
  it('fails a call at a deadline later than the one its idle timer was kept for', async () => {
    const watch = new DeadlineWatch();
    const first = new FakeCall();
    watch.add(first, Date.now() + 40);
    watch.delete(first);
    const second = new FakeCall();
    const deadline = Date.now() + 120;
    watch.add(second, deadline);
    await sleep(60);
    expect(second.aborted).toEqual([]);
    await sleep(120);
    expect(second.aborted.map((a) => a.error.code)).toEqual([GrpcStatus.DeadlineExceeded]);
    expect(second.aborted[0]!.at).toBeGreaterThanOrEqual(deadline);
    expect(first.aborted).toEqual([]);
    watch.stop();
  });

  it('fails a call at a deadline earlier than the kept timer', async () => {
    const watch = new DeadlineWatch();
    const first = new FakeCall();
    watch.add(first, Date.now() + 30_000);
    watch.delete(first);
    const second = new FakeCall();
    const deadline = Date.now() + 40;
    watch.add(second, deadline);
    await sleep(100);
    expect(second.aborted.map((a) => a.error.code)).toEqual([GrpcStatus.DeadlineExceeded]);
    expect(second.aborted[0]!.at).toBeGreaterThanOrEqual(deadline);
    watch.stop();
  });

  it('keeps its timer unreferenced while idle, and drops it on stop', () => {
    const before = timers();
    const watch = new DeadlineWatch();
    const call = new FakeCall();
    watch.add(call, Date.now() + 30_000);
    expect(timers()).toBe(before + 1);
    watch.delete(call);
    // Kept for the next call, but it no longer keeps the process alive.
    expect(timers()).toBe(before);
    watch.add(call, Date.now() + 30_000);
    expect(timers()).toBe(before + 1);
    watch.delete(call);
    watch.stop();
    watch.add(call, Date.now() + 30_000);
    watch.delete(call);
    expect(timers()).toBe(before);
    expect(call.aborted).toEqual([]);
  });
});

describe('AbortWatch', () => {
  it("removes a caller's listener with its last call, and keeps one on a signal that outlives its calls until stop", () => {
    const watch = new AbortWatch();
    const caller = new AbortController();
    const closing = new AbortController();
    const [a, b] = [new FakeCall(), new FakeCall()];
    watch.add(caller.signal, a);
    watch.add(caller.signal, b);
    expect(listeners(caller.signal)).toBe(1);
    watch.delete(caller.signal, a);
    watch.delete(caller.signal, b);
    expect(listeners(caller.signal)).toBe(0);
    for (let i = 0; i < 3; i++) {
      watch.add(closing.signal, a, true);
      watch.delete(closing.signal, a);
      expect(listeners(closing.signal)).toBe(1);
    }
    watch.stop();
    expect(listeners(closing.signal)).toBe(0);
    expect([a.aborted, b.aborted]).toEqual([[], []]);
  });

  it('aborts every call on a kept signal, once, with its reason', () => {
    const watch = new AbortWatch();
    const closing = new AbortController();
    const [a, b, gone] = [new FakeCall(), new FakeCall(), new FakeCall()];
    watch.add(closing.signal, gone, true);
    watch.delete(closing.signal, gone);
    watch.add(closing.signal, a, true);
    watch.add(closing.signal, b, true);
    const reason = new Error('closing');
    closing.abort(reason);
    expect([a, b, gone].map((c) => c.aborted.map((x) => [x.error.code, x.error.cause]))).toEqual([
      [[GrpcStatus.Cancelled, reason]],
      [[GrpcStatus.Cancelled, reason]],
      [],
    ]);
    expect(listeners(closing.signal)).toBe(0);
  });
});
