// The lock calls of one process on one session's mutex key take turns here before they queue in
// etcd. Go's layout gives a session ONE key per lock name, so two calls of a session cannot both
// queue with it and still exclude each other: Go's Mutex lets both "hold" (one unlock then frees
// the lock under the other). Here the second call waits for the first one's hold to end, then
// queues with a new incarnation of the key, so it gets a fencing token of its own.
import { AbortedError } from '@etcdkit/client';
import type { Session } from './session.js';

/** One waiting call: resumed with its turn (its signal's abort takes it out of the line). */
interface Waiter {
  readonly take: () => void;
}

/** The calls of one session on one key: the one whose turn it is, and the others in call order. */
class Turns {
  busy = false;
  readonly waiting: Waiter[] = [];
}

const bySession = new WeakMap<Session, Map<string, Turns>>();

function turnsOf(session: Session, key: string): Turns {
  let byKey = bySession.get(session);
  if (byKey === undefined) {
    byKey = new Map();
    bySession.set(session, byKey);
  }
  let turns = byKey.get(key);
  if (turns === undefined) {
    turns = new Turns();
    byKey.set(key, turns);
  }
  return turns;
}

/** Ends a turn: the next waiting call gets it (once; later calls do nothing). */
export type PassTurn = () => void;

function passer(session: Session, key: string, turns: Turns): PassTurn {
  let passed = false;
  return () => {
    if (passed) return;
    passed = true;
    const next = turns.waiting.shift();
    if (next !== undefined) {
      next.take();
      return;
    }
    turns.busy = false;
    bySession.get(session)?.delete(key);
  };
}

/**
 * The turn of a call of `session` on `key` now, or undefined when another call of this process
 * has it (holds the lock with this key, or waits for it).
 */
export function turnNow(session: Session, key: string): PassTurn | undefined {
  return claim(session, key, turnsOf(session, key));
}

/** The turn, if nobody has it. */
function claim(session: Session, key: string, turns: Turns): PassTurn | undefined {
  if (turns.busy) return undefined;
  turns.busy = true;
  return passer(session, key, turns);
}

/**
 * Waits until no earlier call of this process on `session`'s `key` is left, in call order.
 * Rejects with AbortedError when `signal` aborts first (the call then leaves the line).
 */
export function nextTurn(
  session: Session,
  key: string,
  signal: AbortSignal | undefined,
): Promise<PassTurn> {
  if (signal?.aborted) return Promise.reject(new AbortedError({ cause: signal.reason }));
  const turns = turnsOf(session, key);
  const now = claim(session, key, turns);
  if (now !== undefined) return Promise.resolve(now);
  return new Promise<PassTurn>((resolve, reject) => {
    const onAbort = () => {
      const at = turns.waiting.indexOf(waiter);
      if (at >= 0) turns.waiting.splice(at, 1);
      reject(new AbortedError({ cause: signal?.reason }));
    };
    const waiter: Waiter = {
      take: () => {
        signal?.removeEventListener('abort', onAbort);
        resolve(passer(session, key, turns));
      },
    };
    turns.waiting.push(waiter);
    signal?.addEventListener('abort', onAbort, { once: true });
  });
}
