// The probe the leak tests count with: it sees plain listeners and AbortSignal.any() followers.
import { describe, expect, it } from 'vitest';
import { abortRegistrations, dependantSignals } from '../src/index.js';

describe('abortRegistrations', () => {
  it('counts abort listeners, and drops them when they are removed', () => {
    const source = new AbortController().signal;
    const listener = () => {};
    expect(abortRegistrations(source)).toBe(0);
    source.addEventListener('abort', listener, { once: true });
    expect(abortRegistrations(source)).toBe(1);
    source.removeEventListener('abort', listener);
    expect(abortRegistrations(source)).toBe(0);
  });

  it('counts the AbortSignal.any() signals following a source, which stay after they abort', () => {
    const source = new AbortController().signal;
    // Kept reachable: newer Nodes prune the entry of a follower once it is collected.
    const followers: AbortSignal[] = [];
    for (let i = 0; i < 3; i++) {
      const other = new AbortController();
      followers.push(AbortSignal.any([source, other.signal]));
      other.abort();
    }
    expect(followers.every((follower) => follower.aborted)).toBe(true);
    expect(dependantSignals(source)).toBe(3);
    expect(abortRegistrations(source)).toBe(3);
  });
});
