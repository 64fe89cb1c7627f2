// What the linearizability checker needs to know about an object to decide a history of it.
import type { Operation } from '../history.js';

/**
 * A sequential specification: the states an object goes through and which answers each state
 * allows. Models are deterministic: the state after an operation follows from the state before,
 * the input and the output (for an `unknown` operation, from the state and the input alone).
 */
export interface Model<S, I, O> {
  /** Short name, used in reports (`register`, `txn`, ...). */
  readonly name: string;
  /** The state before the first operation. */
  init(): S;
  /**
   * The state after `input` answered with `output` in state `state`, or `undefined` when that
   * answer is impossible there. `output` is `undefined` for an `unknown` operation: any answer
   * is allowed, and the effect is what the input does in that state.
   */
  step(state: S, input: I, output: O | undefined): S | undefined;
  /** A short string equal for equal states (used to remember visited states). */
  hash(state: S): string;
  /** Whether two states are the same (called when hashes are equal). */
  equal(a: S, b: S): boolean;
  /**
   * Splits a history into independent sub-histories, each linearizable on its own exactly when
   * the whole is (P-compositionality): one per key for a register. Absent: the whole history is
   * one partition.
   */
  partition?(history: readonly Operation<I, O>[]): Operation<I, O>[][];
  /**
   * Rewrites one partition before the search, without changing whether it is linearizable:
   * e.g. drops unknown writes nobody could observe, and ends an unknown write no later than the
   * first operation that saw its effect. Unknown operations may get a finite `end`: the last
   * moment they can take effect, if they take effect at all.
   */
  prepare?(ops: readonly Operation<I, O>[]): Operation<I, O>[];
  /**
   * Whether a subset of a partition still makes sense on its own when looking for the smallest
   * counterexample, e.g. every value read was written by an operation of the subset. Absent:
   * every subset does.
   */
  selfContained?(ops: readonly Operation<I, O>[]): boolean;
  /** One line describing an operation, for reports. */
  describe(op: Operation<I, O>): string;
}
