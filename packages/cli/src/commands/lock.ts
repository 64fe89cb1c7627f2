// `etcdkit lock NAME [-- CMD]`: the lock in Go's layout, shared with `etcdctl lock` and Go's
// concurrency.Mutex (NAME/<lease id in hex>, FIFO by create revision).
import { type Lock, Mutex } from '@etcdkit/recipes';
import type { Holder } from '../hold-command.js';

/** The lock NAME. */
export function lockHolder(name: string): Holder<Lock> {
  return {
    what: `lock ${name}`,
    acquire: (session, signal) => new Mutex(session, name).lock({ signal }),
    tryAcquire: (session) => new Mutex(session, name).tryLock(),
    value: () => '',
    // etcdctl's names: the key and the revision of the response that granted the lock.
    env: (lock) => ({ ETCD_LOCK_KEY: lock.key, ETCD_LOCK_REV: String(lock.header.revision) }),
  };
}
