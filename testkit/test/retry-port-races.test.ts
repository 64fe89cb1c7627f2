// The one retry rule of startEtcd, startEtcdCluster and startAdded: a start that lost the race for
// its ports (etcd exited with "address already in use") is tried again, three times in all.
import { describe, expect, it } from 'vitest';
import { EtcdStartError } from '../src/errors.js';
import { retryPortRaces } from '../src/etcd-node.js';

const lostRace = () =>
  new EtcdStartError(
    'ETCD_EXITED',
    'etcd member0 exited with code 1 before it became ready',
    'listen tcp 127.0.0.1:2379: bind: address already in use',
  );

/** A start that fails with `failures` in turn, then resolves to the attempt's number. */
function starts(failures: readonly Error[]): { start: () => Promise<number>; calls: () => number } {
  let calls = 0;
  return {
    start: async () => {
      calls++;
      const failure = failures[calls - 1];
      if (failure !== undefined) throw failure;
      return calls;
    },
    calls: () => calls,
  };
}

describe('retryPortRaces', () => {
  it('tries again after a lost port race and resolves to the start that succeeded', async () => {
    const { start, calls } = starts([lostRace(), lostRace()]);
    await expect(retryPortRaces(start)).resolves.toBe(3);
    expect(calls()).toBe(3);
  });

  it('gives up after three lost races with the last one', async () => {
    const last = lostRace();
    const { start, calls } = starts([lostRace(), lostRace(), last, lostRace()]);
    await expect(retryPortRaces(start)).rejects.toBe(last);
    expect(calls()).toBe(3);
  });

  it('does not retry any other failure', async () => {
    const timeout = new EtcdStartError('ETCD_START_TIMEOUT', 'did not become ready', '');
    const exited = new EtcdStartError(
      'ETCD_EXITED',
      'exited',
      'member has already been bootstrapped',
    );
    for (const failure of [timeout, exited, new Error('spawn failed')]) {
      const { start, calls } = starts([failure]);
      await expect(retryPortRaces(start)).rejects.toBe(failure);
      expect(calls()).toBe(1);
    }
  });

  it('does not retry once giveUp says so (the cluster was stopped meanwhile)', async () => {
    const race = lostRace();
    const { start, calls } = starts([race]);
    await expect(retryPortRaces(start, () => true)).rejects.toBe(race);
    expect(calls()).toBe(1);
  });
});
