// A counter incremented under a lock: each critical section reads n and writes n + 1.
import type { Model } from '../checker/model.js';
import type { Operation } from '../history.js';

/**
 * A critical section that read `from` and then (maybe) wrote `from + 1`, or a plain read of the
 * counter. Recording the value read in the input lets an unknown write be judged too.
 */
export type CounterInput =
  | { readonly type: 'increment'; readonly from: number }
  | { readonly type: 'read' };

/** `wrote`: the write of `from + 1` took effect (false: refused by the fence); `value`: a read. */
export type CounterOutput =
  | { readonly type: 'increment'; readonly wrote: boolean }
  | { readonly type: 'read'; readonly value: number };

/** An operation of a lock-guarded counter history. */
export type CounterOperation = Operation<CounterInput, CounterOutput>;

/**
 * The lock-guarded counter: linearizable exactly when the critical sections were mutually
 * exclusive as far as the counter can tell. An increment's read and write are one atomic step
 * (the lock's promise); a lost or doubled increment has no place in any order.
 */
export function counterModel(): Model<number, CounterInput, CounterOutput> {
  return {
    name: 'lock-guarded counter',
    init: () => 0,
    step: (n, input, output) => {
      if (input.type === 'read')
        return output?.type === 'read' && output.value !== n ? undefined : n;
      if (n !== input.from) return undefined;
      // Unknown: the write may have happened; refused: the critical section only read.
      if (output === undefined) return n + 1;
      return output.type === 'increment' && output.wrote ? n + 1 : n;
    },
    // Every value seen was made by an increment of the subset (or is the initial 0).
    selfContained: (ops) => {
      const made = new Set<number>([0]);
      for (const op of ops) if (op.input.type === 'increment') made.add(op.input.from + 1);
      return ops.every((op) =>
        op.input.type === 'increment'
          ? made.has(op.input.from)
          : op.output?.type !== 'read' || made.has(op.output.value),
      );
    },
    hash: String,
    equal: (a, b) => a === b,
    describe: (op) => {
      const { input, output } = op;
      if (input.type === 'read')
        return `read -> ${output?.type === 'read' ? output.value : op.status}`;
      const result =
        op.status !== 'ok'
          ? op.status
          : output?.type === 'increment' && output.wrote
            ? 'wrote'
            : 'refused by the fence';
      return `read ${input.from}, write ${input.from + 1} -> ${result}`;
    },
  };
}
