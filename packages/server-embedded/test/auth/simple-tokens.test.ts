// Simple tokens on a virtual clock: their form, their sliding TTL, and what forgets them.
import { describe, expect, it } from 'vitest';
import { SimpleTokens } from '../../src/auth/simple-tokens.js';
import { VirtualClock } from '../../src/index.js';

describe('simple tokens', () => {
  it('are 16 letters, a dot and the index they were issued at, each different', () => {
    const tokens = new SimpleTokens(new VirtualClock(), 300);
    const first = tokens.assign('alice', 41);
    const second = tokens.assign('alice', 42);
    expect(first).toMatch(/^[A-Za-z]{16}\.41$/);
    expect(second).toMatch(/^[A-Za-z]{16}\.42$/);
    expect(first.slice(0, 16)).not.toBe(second.slice(0, 16));
    expect([tokens.use(first), tokens.use(second), tokens.use('unknown.1')]).toEqual([
      'alice',
      'alice',
      undefined,
    ]);
  });

  it('live for the TTL after they were last used', async () => {
    const clock = new VirtualClock();
    const tokens = new SimpleTokens(clock, 5);
    const token = tokens.assign('alice', 1);
    await clock.advance(5_000);
    expect(tokens.use(token)).toBe('alice');
    await clock.advance(4_000);
    expect(tokens.use(token)).toBe('alice');
    await clock.advance(5_001);
    expect(tokens.use(token)).toBeUndefined();
    // Forgotten for good, not only refused.
    expect(tokens.size).toBe(0);
  });

  it("a TTL that is not positive is etcd's default, 300 s", async () => {
    const clock = new VirtualClock();
    const tokens = new SimpleTokens(clock, 0);
    const token = tokens.assign('alice', 1);
    await clock.advance(300_000);
    expect(tokens.use(token)).toBe('alice');
    await clock.advance(300_001);
    expect(tokens.use(token)).toBeUndefined();
  });

  it('are forgotten per user, all at once, and swept when new ones are issued', async () => {
    const clock = new VirtualClock();
    const tokens = new SimpleTokens(clock, 1);
    const alice = tokens.assign('alice', 1);
    const bob = tokens.assign('bob', 2);
    tokens.invalidateUser('alice');
    expect([tokens.use(alice), tokens.use(bob)]).toEqual([undefined, 'bob']);
    tokens.clear();
    expect(tokens.use(bob)).toBeUndefined();
    tokens.assign('carol', 3);
    await clock.advance(1_001);
    tokens.assign('dave', 4);
    expect(tokens.size).toBe(1);
  });
});
