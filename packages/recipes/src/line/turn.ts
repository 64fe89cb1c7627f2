// Waiting for one's turn in a line of keys ordered by create revision (Mutex, Election, RWMutex,
// Semaphore, waitForPredecessors), the one way every waiter waits, compaction or not: a read of the
// keys ahead, then ONE watch over them and the own key (turn-watch.ts), kept as the hold's loss
// watch once the turn comes; when the watch cannot tell, a read of the line again.
import type { KV, ResponseHeader } from '@etcdkit/client';
import { type LineRead, ownKeyDeleted, readAhead, type Waiter } from './line-read.js';
import { TurnWatch } from './turn-watch.js';

/** @internal The turn {@link watchForTurn} found. */
export interface Turn {
  /** The header of the revision the turn came at. */
  readonly header: ResponseHeader;
  /**
   * The watch that saw it, to keep as the own key's loss watch ({@link TurnWatch.onLoss}) or
   * close; undefined when a read found the turn (nothing watches the own key then).
   */
  readonly watch: TurnWatch | undefined;
}

/**
 * @internal Waits for the turn of `waiter`: fewer than `slots` keys left ahead of it. Starts from
 * `first`, a read of the line (with one slot, at least its newest key ahead; with more, every key
 * ahead), read here when not given; then one {@link TurnWatch} over the keys it waits on and the
 * own key. When those go and a read finds others still ahead, a watch over them takes over (from
 * just after the read, which checked the own key); when the watch's start was compacted, the line
 * is read again. Rejects with SessionExpiredError when the own key went first, AbortedError on
 * abort, or the failure of a read or watch.
 */
export async function watchForTurn(
  kv: KV,
  waiter: Waiter,
  first: LineRead | undefined,
  signal: AbortSignal,
): Promise<Turn> {
  const recheck = (stop: AbortSignal) => readAhead(kv, waiter, stop);
  // With more slots only a read of every key ahead can prove the turn.
  const usable = first !== undefined && (waiter.slots === 1 || first.complete === true);
  let read = usable ? first : await recheck(signal);
  for (;;) {
    if (read.predecessors.length < waiter.slots) return { header: read.header, watch: undefined };
    const watch = new TurnWatch(kv, waiter, read, recheck, signal);
    const outcome = await watch.turn;
    if ('held' in outcome) return { header: outcome.held, watch };
    watch.close();
    if ('lostAt' in outcome) throw ownKeyDeleted(waiter.ownKey?.key, outcome.lostAt);
    read = 'next' in outcome ? outcome.next : await recheck(signal);
  }
}
