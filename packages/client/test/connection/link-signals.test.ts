// linkSignals: aborts with the first source that aborts, and release() leaves nothing on the sources.
import { abortRegistrations } from '@etcdkit/testkit';
import { describe, expect, it } from 'vitest';
import { linkSignals } from '../../src/connection/link-signals.js';

describe('linkSignals', () => {
  it('aborts with the reason of the source that aborts, and then lets go of the others', () => {
    const [a, b] = [new AbortController(), new AbortController()];
    const linked = linkSignals(a.signal, undefined, b.signal);
    expect(linked.signal.aborted).toBe(false);
    expect([abortRegistrations(a.signal), abortRegistrations(b.signal)]).toEqual([1, 1]);
    const reason = new Error('b stopped');
    b.abort(reason);
    expect(linked.signal.aborted).toBe(true);
    expect(linked.signal.reason).toBe(reason);
    expect([abortRegistrations(a.signal), abortRegistrations(b.signal)]).toEqual([0, 0]);
    a.abort(new Error('a stopped'));
    expect(linked.signal.reason).toBe(reason);
  });

  it('is aborted at once, with the first aborted source’s reason, and listens to nothing', () => {
    const live = new AbortController();
    const reason = new Error('already');
    const linked = linkSignals(live.signal, AbortSignal.abort(reason), AbortSignal.abort('later'));
    expect(linked.signal.aborted).toBe(true);
    expect(linked.signal.reason).toBe(reason);
    expect(abortRegistrations(live.signal)).toBe(0);
  });

  it('release() removes its listeners, is idempotent, and the signal then follows nothing', () => {
    const source = new AbortController();
    const before = abortRegistrations(source.signal);
    for (let i = 0; i < 1_000; i++) {
      const linked = linkSignals(source.signal, new AbortController().signal);
      linked.release();
      linked.release();
    }
    expect(abortRegistrations(source.signal)).toBe(before);
    const released = linkSignals(source.signal);
    released.release();
    source.abort();
    expect(released.signal.aborted).toBe(false);
  });

  it('with no source, never aborts', () => {
    const linked = linkSignals(undefined);
    expect(linked.signal.aborted).toBe(false);
    linked.release();
  });
});
