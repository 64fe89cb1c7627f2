// `etcdkit semaphore --limit N NAME -- CMD`: at most N holders of NAME at once, FIFO.
import { type Permit, Semaphore } from '@etcdkit/recipes';
import type { Holder } from '../hold-command.js';

/** A permit of the semaphore NAME of `limit` permits. */
export function permitHolder(name: string, limit: number): Holder<Permit> {
  return {
    what: `permit of semaphore ${name}`,
    acquire: (session, signal) => new Semaphore(session, name, limit).acquire({ signal }),
    tryAcquire: (session) => new Semaphore(session, name, limit).tryAcquire(),
    value: () => '',
    env: () => ({}),
  };
}
