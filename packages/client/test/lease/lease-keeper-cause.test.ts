// The cause a lost lease names is a failure its own keepalive loop saw, not one left over from a
// loop that ended before the lease was added (a restart's "Connection dropped" once named so).
import { describe, expect, it } from 'vitest';
import type { Rpc } from '../../src/connection/types.js';
import { type EtcdError, UnavailableError } from '../../src/errors.js';
import { type KeeperLossReason, LeaseKeeper } from '../../src/lease/lease-keepalive.js';
import type { BidiStream } from '../../src/transport/types.js';

/** A stream that fails at its first read with `error`, or never answers when there is none. */
function stream(error: Error | undefined): BidiStream<never, never> {
  let cancelled: (() => void) | undefined;
  return {
    write: () => {},
    end: () => {},
    cancel: () => cancelled?.(),
    [Symbol.asyncIterator]: () => ({
      next: () =>
        error
          ? Promise.reject(error)
          : new Promise((resolve) => {
              cancelled = () => resolve({ done: true, value: undefined });
            }),
      return: async () => ({ done: true, value: undefined }),
    }),
  };
}

function lease(id: bigint, aliveUntil: number) {
  let lost: (loss: { reason: KeeperLossReason; cause: EtcdError | undefined }) => void = () => {};
  const loss = new Promise<{ reason: KeeperLossReason; cause: EtcdError | undefined }>(
    (resolve) => {
      lost = resolve;
    },
  );
  return {
    loss,
    kept: {
      id,
      ttl: 1n,
      aliveUntil,
      hooks: undefined,
      refreshed: () => {},
      lost: (reason: KeeperLossReason, cause?: EtcdError) => lost({ reason, cause }),
    },
  };
}

describe('LeaseKeeper loss causes', () => {
  it("does not blame a lease added after the loop ended on that loop's last failure", async () => {
    const failure = new UnavailableError({ message: 'the first stream failed' });
    const opened: (Error | undefined)[] = [failure];
    let streams = 0;
    const rpc = {
      bidiStream: async () => {
        streams++;
        return stream(opened.shift());
      },
    } as unknown as Rpc;
    const keeper = new LeaseKeeper(rpc);
    const first = lease(1n, performance.now() + 60_000);
    const release = keeper.add(first.kept);
    // The first stream fails; the loop reopens (the second stream never answers).
    await expect.poll(() => streams).toBe(2);
    release();
    // The loop ends with no lease left; a lease whose life is already over joins later.
    await new Promise((resolve) => setTimeout(resolve, 50));
    const late = lease(2n, performance.now());
    keeper.add(late.kept);
    const loss = await late.loss;
    expect(loss.reason).toBe('timeout');
    expect(loss.cause).toBeUndefined();
    keeper.close();
  });

  it('names the failure its own loop saw', async () => {
    // Every stream fails at once, so none stalls (a stall would be the cause then).
    const failure = new UnavailableError({ message: 'the stream failed' });
    let streams = 0;
    const rpc = {
      bidiStream: async () => {
        streams++;
        return stream(failure);
      },
    } as unknown as Rpc;
    const keeper = new LeaseKeeper(rpc);
    const kept = lease(3n, performance.now() + 300);
    keeper.add(kept.kept);
    const loss = await kept.loss;
    expect(streams).toBeGreaterThanOrEqual(1);
    expect(loss.reason).toBe('timeout');
    expect(loss.cause).toBe(failure);
    keeper.close();
  });
});
