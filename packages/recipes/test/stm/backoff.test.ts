// The pause between STM attempts is the client's backoff formula, fully jittered: uniform over
// [0, min(maxDelayMs, minDelayMs * 2^(retry - 1))).
import { describe, expect, it } from 'vitest';
import { backoffDelay, DEFAULT_STM_BACKOFF } from '../../src/stm/backoff.js';

describe('STM backoff', () => {
  it('draws each pause below a ceiling doubling from minDelayMs to maxDelayMs', () => {
    const retries = [1, 2, 3, 7, 8, 30];
    expect(retries.map((n) => backoffDelay(n, DEFAULT_STM_BACKOFF, () => 0))).toEqual([
      0, 0, 0, 0, 0, 0,
    ]);
    expect(retries.map((n) => backoffDelay(n, DEFAULT_STM_BACKOFF, () => 0.5))).toEqual([
      2.5, 5, 10, 160, 250, 250,
    ]);
    expect(backoffDelay(30, DEFAULT_STM_BACKOFF, () => 0.999)).toBeCloseTo(499.5, 9);
    expect(backoffDelay(2, { minDelayMs: 1, maxDelayMs: 3 }, () => 0.5)).toBe(1);
    expect(backoffDelay(3, { minDelayMs: 1, maxDelayMs: 3 }, () => 0.5)).toBe(1.5);
  });
});
