import { describe, expect, it } from 'vitest';
import { every, VirtualClock } from '../../src/index.js';

describe('VirtualClock', () => {
  it('starts at 0 (or the time given) and moves only when advanced', async () => {
    const clock = new VirtualClock();
    expect(clock.now()).toBe(0);
    await clock.advance(1500);
    expect(clock.now()).toBe(1500);
    expect(new VirtualClock(42).now()).toBe(42);
  });

  it('runs every timer due on the way, in due order, each seeing its own due time', async () => {
    const clock = new VirtualClock();
    const ran: string[] = [];
    clock.setTimer(() => ran.push(`b@${clock.now()}`), 300);
    clock.setTimer(() => ran.push(`a@${clock.now()}`), 100);
    clock.setTimer(() => ran.push(`c@${clock.now()}`), 1000);
    await clock.advance(999);
    expect(ran).toEqual(['a@100', 'b@300']);
    await clock.advance(1);
    expect(ran).toEqual(['a@100', 'b@300', 'c@1000']);
  });

  it('runs timers due at the same time in the order they were set', async () => {
    const clock = new VirtualClock();
    const ran: number[] = [];
    for (const n of [1, 2, 3]) clock.setTimer(() => ran.push(n), 50);
    await clock.advance(50);
    expect(ran).toEqual([1, 2, 3]);
  });

  it('runs synchronous timers before advance() returns', () => {
    const clock = new VirtualClock();
    let ran = false;
    clock.setTimer(() => {
      ran = true;
    }, 10);
    void clock.advance(10);
    expect(ran).toBe(true);
    expect(clock.now()).toBe(10);
  });

  it('runs timers set by timers when they fall due within the same advance', async () => {
    const clock = new VirtualClock();
    const ran: number[] = [];
    clock.setTimer(() => {
      ran.push(clock.now());
      clock.setTimer(() => ran.push(clock.now()), 100);
    }, 100);
    await clock.advance(250);
    expect(ran).toEqual([100, 200]);
    expect(clock.pendingTimers).toBe(0);
  });

  it('skips cancelled timers', async () => {
    const clock = new VirtualClock();
    const ran: string[] = [];
    const timer = clock.setTimer(() => ran.push('cancelled'), 10);
    clock.setTimer(() => ran.push('kept'), 20);
    timer.cancel();
    expect(clock.pendingTimers).toBe(1);
    await clock.advance(100);
    expect(ran).toEqual(['kept']);
  });

  it('waits for a callback that returns a promise before running the next timer', async () => {
    const clock = new VirtualClock();
    const ran: string[] = [];
    const asyncCallback = async (): Promise<void> => {
      await Promise.resolve();
      await Promise.resolve();
      ran.push('first done');
    };
    clock.setTimer(asyncCallback as () => void, 10);
    clock.setTimer(() => ran.push('second'), 20);
    await clock.advance(20);
    expect(ran).toEqual(['first done', 'second']);
  });

  it('runs overlapping advances one after the other', async () => {
    const clock = new VirtualClock();
    const seen: number[] = [];
    const slow = async (): Promise<void> => {
      await new Promise((resolve) => setTimeout(resolve, 5));
      seen.push(clock.now());
    };
    clock.setTimer(slow as () => void, 100);
    clock.setTimer(() => seen.push(clock.now()), 150);
    const first = clock.advance(100);
    const second = clock.advance(100);
    await Promise.all([first, second]);
    expect(seen).toEqual([100, 150]);
    expect(clock.now()).toBe(200);
  });

  it('still runs the other due timers when one throws, then rejects with its error', async () => {
    const clock = new VirtualClock();
    const ran: number[] = [];
    clock.setTimer(() => {
      throw new Error('boom');
    }, 10);
    clock.setTimer(() => ran.push(20), 20);
    await expect(clock.advance(30)).rejects.toThrow('boom');
    expect(ran).toEqual([20]);
    expect(clock.now()).toBe(30);
  });

  it('refuses to go backwards', async () => {
    await expect(new VirtualClock().advance(-1)).rejects.toBeInstanceOf(RangeError);
  });

  it('every() ticks at each interval until cancelled', async () => {
    const clock = new VirtualClock();
    const ticks: number[] = [];
    const timer = every(clock, 500, () => ticks.push(clock.now()));
    await clock.advance(1600);
    expect(ticks).toEqual([500, 1000, 1500]);
    timer.cancel();
    await clock.advance(1000);
    expect(ticks).toEqual([500, 1000, 1500]);
  });
});
