// The SDK's one backoff formula: exact delays for every jitter kind with an injected random, and
// the reconnect delays of the http2 channel, which use it unjittered.
import { describe, expect, it } from 'vitest';
import { type BackoffOptions, backoffDelay } from '../../src/transport/backoff.js';
import { RECONNECT_BACKOFF } from '../../src/transport/http2-channel.js';

const failures = [1, 2, 3, 4, 5, 9];

describe('backoffDelay', () => {
  it('grows exponentially and is capped, unjittered', () => {
    const shape: BackoffOptions = { baseMs: 100, maxMs: 1000, jitter: false };
    expect(failures.map((n) => backoffDelay(n, shape, () => 0.5))).toEqual([
      100, 200, 400, 800, 1000, 1000,
    ]);
    expect(backoffDelay(0, shape)).toBe(0);
    expect(backoffDelay(-1, shape)).toBe(0);
  });

  it('honours a factor other than 2', () => {
    const shape: BackoffOptions = { baseMs: 10, maxMs: 1000, factor: 3, jitter: false };
    expect([1, 2, 3, 4, 5].map((n) => backoffDelay(n, shape))).toEqual([10, 30, 90, 270, 810]);
  });

  it('jitters within [d/2, d) by default (jitter true), after the cap', () => {
    const shape: BackoffOptions = { baseMs: 100, maxMs: 1000 };
    expect(failures.map((n) => backoffDelay(n, shape, () => 0))).toEqual([
      50, 100, 200, 400, 500, 500,
    ]);
    expect(failures.map((n) => backoffDelay(n, { ...shape, jitter: true }, () => 0.75))).toEqual([
      87.5, 175, 350, 700, 875, 875,
    ]);
    expect(backoffDelay(3, shape, () => 0.999)).toBeCloseTo(399.8, 9);
    expect(backoffDelay(9, shape, () => 0.999)).toBeCloseTo(999.5, 9);
  });

  it("jitters a call's retries above the delay, [d, 2d), then caps and rounds it", () => {
    const shape: BackoffOptions = { baseMs: 100, maxMs: 1000, jitter: 'above' };
    expect([1, 2, 3, 4, 5].map((n) => backoffDelay(n, shape, () => 0))).toEqual([
      100, 200, 400, 800, 1000,
    ]);
    expect([1, 2, 3].map((n) => backoffDelay(n, shape, () => 0.5))).toEqual([150, 300, 600]);
    expect(backoffDelay(3, shape, () => 0.999)).toBe(800);
    expect(backoffDelay(4, shape, () => 0.5)).toBe(1000);
    expect(backoffDelay(1, { baseMs: 0.3, maxMs: 10, jitter: 'above' }, () => 0.5)).toBe(0);
    expect(backoffDelay(0, shape, () => 0.5)).toBe(0);
  });

  it("jitters fully, uniform over [0, d), after the cap (jitter 'full')", () => {
    const shape: BackoffOptions = { baseMs: 5, maxMs: 500, jitter: 'full' };
    const retries = [1, 2, 3, 7, 8, 20];
    expect(retries.map((n) => backoffDelay(n, shape, () => 0))).toEqual([0, 0, 0, 0, 0, 0]);
    expect(retries.map((n) => backoffDelay(n, shape, () => 0.5))).toEqual([
      2.5, 5, 10, 160, 250, 250,
    ]);
    expect(backoffDelay(3, shape, () => 0.999)).toBeCloseTo(19.98, 9);
    expect(backoffDelay(20, shape, () => 0.999)).toBeCloseTo(499.5, 9);
    expect(backoffDelay(0, shape, () => 0.5)).toBe(0);
  });

  it('gives the http2 channel its reconnect delays: 250 ms doubling to 5 s, unjittered', () => {
    expect(
      [1, 2, 3, 4, 5, 6, 7, 20].map((n) => backoffDelay(n, RECONNECT_BACKOFF, () => 0.5)),
    ).toEqual([250, 500, 1000, 2000, 4000, 5000, 5000, 5000]);
  });
});
