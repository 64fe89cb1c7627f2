// The locks STM runs take on keys they keep conflicting on (stm/contention.ts): a MultiLock of
// Mutexes in Go's layout, so runs of every process, and Go programs locking the same names, take
// turns.

import { cmp } from '@etcdkit/client';
import { recipeName } from '../recipe-name.js';
import type { Session } from '../session/session.js';
import type { StmKeyLocks } from '../stm/contention.js';
import { MultiLock } from './multi-lock.js';

/** The default prefix of {@link stmKeyLocks}. */
export const DEFAULT_STM_LOCK_PREFIX = 'stm-lock';

/**
 * Locks on STM keys for `runStm`'s `contention` option: the lock of key K is the {@link Mutex}
 * named `<prefix>/<K in lowercase hex>`, held by `session` (hex, so no key's lock name is a
 * prefix of another's); a run's keys are taken together as a {@link MultiLock}, in byte order.
 * Go takes the same lock with `concurrency.NewMutex(s, prefix+"/"+hex.EncodeToString(K))`.
 * The locks only order the runs: one lost meanwhile (the session's lease expired) costs
 * fairness, never correctness, since every commit's compares still decide.
 */
export function stmKeyLocks(
  session: Session,
  prefix: string = DEFAULT_STM_LOCK_PREFIX,
): StmKeyLocks {
  const checked = recipeName('stmKeyLocks', 'prefix', prefix);
  const nameOf = (key: Uint8Array) => `${checked}/${Buffer.from(key).toString('hex')}`;
  return {
    // A Mutex named N queues its holder and waiters under N + '/'.
    free: (keys) => keys.map((key) => cmp.missing({ prefix: `${nameOf(key)}/` })),
    async lock(keys, signal) {
      const names = keys.map(nameOf);
      const held = await new MultiLock(session, names).lock(signal ? { signal } : {});
      return {
        // Lost or already released: the turn is over either way.
        release: () => held.unlock().catch(() => {}),
      };
    },
  };
}
