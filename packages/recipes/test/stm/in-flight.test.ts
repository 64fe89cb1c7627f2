// A run's keys are held in the local queue while its commit is in flight: a local run on them that
// is ready to commit meanwhile waits for that commit's outcome instead of sending a commit of its
// own (which the first would fail, or which would fail the first), and starts from what the first
// commit left; it finds its keys without reading them when the last local commit on them left them.
// Exact call sequences on each backend; the first commit is held back by the test.
import { Etcd } from '@etcdkit/client';
import { describeEachBackend } from '@etcdkit/testkit';
import { afterAll, beforeAll, beforeEach, expect, it } from 'vitest';
import { runStm } from '../../src/stm/stm.js';
import { deferred } from '../recipes-support.js';

const INITIAL = 1_000;
const TXN = '/etcdserverpb.KV/Txn';
const RANGE = '/etcdserverpb.KV/Range';

describeEachBackend('STM: a commit in flight holds its keys locally', ({ backend, prefix }) => {
  let etcd: Etcd;
  let other: Etcd;
  const calls: string[] = [];
  const k = (name: string) => `${prefix()}${name}`;
  const balance = async (name: string) => Number((await other.get(k(name)))?.text());

  beforeAll(() => {
    const { endpoints } = backend();
    etcd = new Etcd({ endpoints, hooks: { onCall: (event) => calls.push(event.method) } });
    other = new Etcd({ endpoints });
  });
  afterAll(async () => {
    await etcd?.close();
    await other?.close();
  });
  beforeEach(() => {
    calls.length = 0;
  });

  /**
   * `etcd` as runStm sees it, except that the first txn committed after `hold()` waits for the
   * promise `hold` returned before it is sent: a commit in flight for as long as the test wants.
   */
  function gated() {
    let held: { sent: () => void; until: Promise<void> } | undefined;
    const wrap = (txn: object): object => {
      const proxy: object = new Proxy(txn, {
        get(target, name) {
          const value = Reflect.get(target, name, target) as unknown;
          if (typeof value !== 'function') return value;
          if (name === 'commit') {
            return async (...args: unknown[]) => {
              const gate = held;
              held = undefined;
              if (gate) {
                gate.sent();
                await gate.until;
              }
              return (value as (...a: unknown[]) => unknown).apply(target, args);
            };
          }
          // The builder's steps (if, then, else) give a txn to wrap in turn.
          return (...args: unknown[]) => {
            const next = (value as (...a: unknown[]) => unknown).apply(target, args);
            return next === target ? proxy : wrap(next as object);
          };
        },
      });
      return proxy;
    };
    const kv = new Proxy(etcd, {
      get(target, name) {
        const value = Reflect.get(target, name, target) as unknown;
        if (name === 'txn') return () => wrap((value as () => object).call(target));
        return typeof value === 'function' ? value.bind(target) : value;
      },
    });
    return {
      kv,
      /** Holds the next commit; resolves `sent` when runStm calls it; it goes once `until` does. */
      hold(until: Promise<void>) {
        const sent = deferred();
        held = { sent: sent.resolve, until };
        return sent.promise;
      },
    };
  }

  /** Moves `amount` from `from` to `to` through `kv`; `read` runs once both keys are read. */
  const transfer = (kv: Etcd, from: string, to: string, amount: number, read?: () => void) =>
    runStm(kv, async (stm) => {
      const a = Number(await stm.get(k(from)));
      const b = Number(await stm.get(k(to)));
      read?.();
      stm.put(k(from), String(a - amount));
      stm.put(k(to), String(b + amount));
    });

  async function accounts(...names: string[]) {
    for (const name of names) await other.put(k(name), String(INITIAL));
  }

  it('a local run ready while a commit on its keys is in flight sends nothing until it applied, then commits from what it left', async () => {
    await accounts('a', 'b');
    const { kv, hold } = gated();
    const release = deferred();
    const firstSent = hold(release.promise);
    const first = transfer(kv, 'a', 'b', 1);
    await firstSent;
    const secondRead = deferred();
    const second = transfer(kv, 'a', 'b', 5, secondRead.resolve);
    await secondRead.promise;
    // A round trip later its attempt has returned and found the keys held: nothing was sent.
    await other.get(k('a'));
    expect(calls).toEqual([RANGE, RANGE, RANGE, RANGE]);
    release.resolve();
    expect(await first).toMatchObject({ attempts: 1 });
    // Its first attempt was not sent; the second started from the first run's commit: no read.
    expect(await second).toMatchObject({ attempts: 2 });
    expect(calls).toEqual([RANGE, RANGE, RANGE, RANGE, TXN, TXN]);
    expect([await balance('a'), await balance('b')]).toEqual([INITIAL - 6, INITIAL + 6]);
  });

  it('a commit in flight that fails keeps the keys: its run retries first, then the waiting run commits', async () => {
    await accounts('a', 'b');
    const { kv, hold } = gated();
    const release = deferred();
    const firstSent = hold(release.promise);
    const first = transfer(kv, 'a', 'b', 1);
    await firstSent;
    const secondRead = deferred();
    const second = transfer(kv, 'a', 'b', 5, secondRead.resolve);
    await secondRead.promise;
    await other.get(k('a'));
    // A writer elsewhere changes a before the held commit is sent: it fails.
    await other.put(k('a'), String(INITIAL + 100));
    release.resolve();
    // The failed commit brought a's new value: the retry reads nothing.
    expect(await first).toMatchObject({ attempts: 2 });
    expect(await second).toMatchObject({ attempts: 2 });
    expect(calls).toEqual([RANGE, RANGE, RANGE, RANGE, TXN, TXN, TXN]);
    expect([await balance('a'), await balance('b')]).toEqual([INITIAL + 100 - 6, INITIAL + 6]);
  });

  it('a run on other keys is not held by a commit in flight', async () => {
    await accounts('a', 'b', 'c', 'd');
    const { kv, hold } = gated();
    const release = deferred();
    const firstSent = hold(release.promise);
    const first = transfer(kv, 'a', 'b', 1);
    await firstSent;
    // It commits while the first run's commit is still held back.
    expect(await transfer(kv, 'c', 'd', 5)).toMatchObject({ attempts: 1 });
    expect(calls).toEqual([RANGE, RANGE, RANGE, RANGE, TXN]);
    release.resolve();
    expect(await first).toMatchObject({ attempts: 1 });
    expect(calls).toEqual([RANGE, RANGE, RANGE, RANGE, TXN, TXN]);
    expect([await balance('c'), await balance('d')]).toEqual([INITIAL - 5, INITIAL + 5]);
  });

  it('a run on keys a local run holds finds them as the last local commit on them left them: it reads nothing before its turn', async () => {
    await accounts('a', 'b');
    const { kv, hold } = gated();
    // A commit of this process on a and b: the local queue knows what it left.
    await transfer(kv, 'a', 'b', 1);
    expect(calls).toEqual([RANGE, RANGE, TXN]);
    const release = deferred();
    const firstSent = hold(release.promise);
    const first = transfer(kv, 'a', 'b', 2);
    await firstSent;
    const secondRead = deferred();
    const second = transfer(kv, 'a', 'b', 5, secondRead.resolve);
    await secondRead.promise;
    await other.get(k('a'));
    // The first run read a and b (nothing held them then); the second found them held, with the
    // values the last commit left: no read, no commit.
    expect(calls).toEqual([RANGE, RANGE, TXN, RANGE, RANGE]);
    release.resolve();
    expect(await first).toMatchObject({ attempts: 1 });
    expect(await second).toMatchObject({ attempts: 2 });
    expect(calls).toEqual([RANGE, RANGE, TXN, RANGE, RANGE, TXN, TXN]);
    expect([await balance('a'), await balance('b')]).toEqual([INITIAL - 8, INITIAL + 8]);
  });

  it('a run that finds its keys from the local queue but none of them held reads them from etcd', async () => {
    await accounts('a', 'b');
    await transfer(etcd, 'a', 'b', 1);
    calls.length = 0;
    // Nothing holds a or b: the values the last commit left are not used, and it commits at once.
    expect(await transfer(etcd, 'a', 'b', 2)).toMatchObject({ attempts: 1 });
    expect(calls).toEqual([RANGE, RANGE, TXN]);
    expect([await balance('a'), await balance('b')]).toEqual([INITIAL - 3, INITIAL + 3]);
  });
});
