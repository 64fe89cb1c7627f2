// Wing & Gong's search for a linearization, with Lowe's memo of visited (linearized set, state)
// pairs: the algorithm porcupine implements, written from its description.
import type { Operation } from '../history.js';
import type { Model } from './model.js';

/** The outcome of one search. */
export type SearchOutcome =
  | { readonly result: 'ok' }
  | { readonly result: 'illegal'; readonly longest: readonly number[] }
  | { readonly result: 'timeout' };

interface Entry {
  readonly op: number;
  readonly call: boolean;
  readonly time: number;
  prev: Entry | undefined;
  next: Entry | undefined;
  match: Entry | undefined;
}

const CLOCK_CHECK_EVERY = 1024;

interface Frame<S> {
  /** The call entry of the operation placed. */
  readonly entry: Entry;
  /** The state before it. */
  readonly state: S;
  /** True when it was left out (an unknown operation that never took effect). */
  readonly skipped: boolean;
}

/**
 * Searches for a linearization of `ops` (ok and unknown operations; failed ones must be left
 * out). An unknown operation takes effect between its start and its `end` (Infinity, or the
 * last moment it could matter, see Model.prepare), or never. Stops with `timeout` at `deadline` (a `performance.now()` time). `illegal` carries the
 * longest linearizable prefix found, as indexes into `ops`.
 */
export function searchLinearization<S, I, O>(
  model: Model<S, I, O>,
  ops: readonly Operation<I, O>[],
  deadline: number,
): SearchOutcome {
  const n = ops.length;
  const head = buildEntries(ops);
  // Unknown operations may be linearized at the very end with no visible effect, so the search is
  // done once every known (ok) operation is in.
  let knownLeft = 0;
  for (const op of ops) if (op.status === 'ok') knownLeft++;
  if (knownLeft === 0) return { result: 'ok' };

  const words = Math.ceil(n / 32);
  const linearized = new Uint32Array(words);
  const zobrist = zobristKeys(n);
  let hashLo = 0;
  let hashHi = 0;
  const cache = new Map<string, { bits: Uint32Array; state: S }[]>();
  const remember = (state: S): boolean => {
    const key = `${hashLo}:${hashHi}:${model.hash(state)}`;
    const seen = cache.get(key);
    if (seen !== undefined) {
      for (const s of seen)
        if (sameBits(s.bits, linearized) && model.equal(s.state, state)) return false;
      seen.push({ bits: linearized.slice(), state });
    } else cache.set(key, [{ bits: linearized.slice(), state }]);
    return true;
  };

  const stack: Frame<S>[] = [];
  let longest: number[] = [];
  let state = model.init();
  let entry = head.next;
  let steps = 0;
  while (entry !== undefined) {
    if (++steps % CLOCK_CHECK_EVERY === 0 && performance.now() > deadline) {
      return { result: 'timeout' };
    }
    if (entry.call) {
      const op = ops[entry.op]!;
      const next = model.step(state, op.input, op.status === 'ok' ? op.output : undefined);
      let lifted = false;
      if (next !== undefined) {
        flip(linearized, entry.op);
        hashLo ^= zobrist[2 * entry.op]!;
        hashHi ^= zobrist[2 * entry.op + 1]!;
        if (remember(next)) {
          stack.push({ entry, state, skipped: false });
          state = next;
          lift(entry);
          lifted = true;
          if (op.status === 'ok' && --knownLeft === 0) return { result: 'ok' };
          entry = head.next;
        } else {
          flip(linearized, entry.op);
          hashLo ^= zobrist[2 * entry.op]!;
          hashHi ^= zobrist[2 * entry.op + 1]!;
        }
      }
      if (!lifted) entry = entry!.next;
    } else if (ops[entry.op]!.status === 'unknown') {
      // An unknown operation not placed by the last moment it could matter: it never took
      // effect. That is the only choice here, so backtracking pops past it.
      const call = entry.match!;
      flip(linearized, call.op);
      hashLo ^= zobrist[2 * call.op]!;
      hashHi ^= zobrist[2 * call.op + 1]!;
      stack.push({ entry: call, state, skipped: true });
      lift(call);
      entry = head.next;
    } else {
      // A pending operation's answer came before it could be placed: undo the last choice.
      if (stack.length > longest.length) longest = stack.map((s) => s.entry.op);
      let top: Frame<S> | undefined;
      do {
        top = stack.pop();
        if (top === undefined) return { result: 'illegal', longest };
        const op = ops[top.entry.op]!;
        if (op.status === 'ok') knownLeft++;
        state = top.state;
        flip(linearized, top.entry.op);
        hashLo ^= zobrist[2 * top.entry.op]!;
        hashHi ^= zobrist[2 * top.entry.op + 1]!;
        unlift(top.entry);
      } while (top.skipped);
      entry = top.entry.next;
    }
  }
  return { result: 'ok' };
}

function buildEntries<I, O>(ops: readonly Operation<I, O>[]): Entry {
  const events: Entry[] = [];
  ops.forEach((op, i) => {
    const call: Entry = {
      op: i,
      call: true,
      time: op.start,
      prev: undefined,
      next: undefined,
      match: undefined,
    };
    const ret: Entry = {
      op: i,
      call: false,
      time: op.end,
      prev: undefined,
      next: undefined,
      match: undefined,
    };
    call.match = ret;
    ret.match = call;
    events.push(call, ret);
  });
  // At equal times calls come first: operations that touch at an instant count as concurrent.
  events.sort((a, b) => a.time - b.time || (a.call === b.call ? a.op - b.op : a.call ? -1 : 1));
  const head: Entry = {
    op: -1,
    call: false,
    time: Number.NEGATIVE_INFINITY,
    prev: undefined,
    next: undefined,
    match: undefined,
  };
  let last = head;
  for (const e of events) {
    last.next = e;
    e.prev = last;
    last = e;
  }
  return head;
}

function lift(entry: Entry): void {
  entry.prev!.next = entry.next;
  if (entry.next !== undefined) entry.next.prev = entry.prev;
  const match = entry.match!;
  match.prev!.next = match.next;
  if (match.next !== undefined) match.next.prev = match.prev;
}

function unlift(entry: Entry): void {
  const match = entry.match!;
  match.prev!.next = match;
  if (match.next !== undefined) match.next.prev = match;
  entry.prev!.next = entry;
  if (entry.next !== undefined) entry.next.prev = entry;
}

function flip(bits: Uint32Array, i: number): void {
  bits[i >>> 5]! ^= 1 << (i & 31);
}

function sameBits(a: Uint32Array, b: Uint32Array): boolean {
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false;
  return true;
}

/** Two random 32-bit words per operation: the linearized set's hash is their XOR. */
function zobristKeys(n: number): Uint32Array {
  const keys = new Uint32Array(2 * n);
  // xorshift32 with a fixed seed: the hash needs spread, not secrecy, and runs stay repeatable.
  let x = 0x9e3779b9;
  for (let i = 0; i < keys.length; i++) {
    x ^= x << 13;
    x ^= x >>> 17;
    x ^= x << 5;
    keys[i] = x >>> 0;
  }
  return keys;
}
