// Deciding a whole history: partitions, a time budget, and the smallest counterexample.
import type { History, Operation } from '../history.js';
import type { Model } from './model.js';
import { searchLinearization } from './search.js';

/** `true`: linearizable; `false`: not; `'unknown'`: the time budget ran out first. */
export type Verdict = boolean | 'unknown';

/** Options of {@link checkLinearizable}. */
export interface CheckOptions {
  /** How long the whole check may search, in ms; then the verdict is `'unknown'`. Default 60 000. */
  readonly timeBudgetMs?: number;
  /**
   * How long to spend shrinking each counterexample, in ms. Default 5 000; 0 reports the failing
   * partition as it is.
   */
  readonly minimizeBudgetMs?: number;
}

/** A set of operations that cannot be linearized together. */
export interface Anomaly<I = unknown, O = unknown> {
  /** The model that rejected them. */
  readonly model: string;
  /** What kind of violation: `not-linearizable` for the checker's own findings. */
  readonly kind: string;
  /** The operations, in order of invocation. */
  readonly ops: readonly Operation<I, O>[];
  /** True when no operation can be removed without the rest becoming linearizable. */
  readonly minimal: boolean;
  /** One line per operation: process, times, request and answer. */
  readonly timeline: readonly string[];
  /** What is wrong, in a sentence. */
  readonly explanation: string;
}

/** What {@link checkLinearizable} decided. */
export interface CheckResult<I = unknown, O = unknown> {
  readonly valid: Verdict;
  /** Operations in the history (failed ones included). */
  readonly ops: number;
  /** Independent sub-histories it was split into. */
  readonly partitions: number;
  /** Partitions whose search ran out of time. */
  readonly undecided: number;
  readonly anomalies: readonly Anomaly<I, O>[];
  /** Time spent, in ms. */
  readonly elapsedMs: number;
}

const DEFAULT_TIME_BUDGET_MS = 60_000;
const DEFAULT_MINIMIZE_BUDGET_MS = 5_000;

/**
 * Decides whether `history` is linearizable with respect to `model`: checks each of the model's
 * partitions on its own (failed operations left out, unknown ones allowed to take effect at any
 * time after their start, or never), and for each partition that is not, reports the smallest set
 * of operations that still conflict.
 */
export function checkLinearizable<S, I, O>(
  model: Model<S, I, O>,
  history: History<I, O>,
  options: CheckOptions = {},
): CheckResult<I, O> {
  const began = performance.now();
  const deadline = began + (options.timeBudgetMs ?? DEFAULT_TIME_BUDGET_MS);
  const minimizeMs = options.minimizeBudgetMs ?? DEFAULT_MINIMIZE_BUDGET_MS;
  const effective = history.filter((op) => op.status !== 'fail');
  const partitions = model.partition?.(effective) ?? [effective.slice()];
  const anomalies: Anomaly<I, O>[] = [];
  let undecided = 0;
  for (const split of partitions) {
    const part = model.prepare?.(split) ?? split;
    const outcome = searchLinearization(model, part, deadline);
    if (outcome.result === 'timeout') undecided++;
    else if (outcome.result === 'illegal') {
      const longest = new Set(outcome.longest);
      const shrunk = shrink(model, part, longest, performance.now() + minimizeMs);
      anomalies.push(describeAnomaly(model, shrunk.ops, shrunk.minimal));
    }
  }
  return {
    valid: anomalies.length > 0 ? false : undecided > 0 ? 'unknown' : true,
    ops: history.length,
    partitions: partitions.length,
    undecided,
    anomalies,
    elapsedMs: performance.now() - began,
  };
}

/** The anomaly report of a set of conflicting operations. */
export function describeAnomaly<S, I, O>(
  model: Model<S, I, O>,
  ops: readonly Operation<I, O>[],
  minimal: boolean,
): Anomaly<I, O> {
  const sorted = [...ops].sort((a, b) => a.start - b.start || a.id - b.id);
  return {
    model: model.name,
    kind: 'not-linearizable',
    ops: sorted,
    minimal,
    timeline: sorted.map((op) => timelineLine(model, op)),
    explanation: `these ${sorted.length} operations of the ${model.name} cannot be put in any order that respects real time and the ${model.name}'s rules`,
  };
}

function timelineLine<S, I, O>(model: Model<S, I, O>, op: Operation<I, O>): string {
  const end = Number.isFinite(op.end) ? op.end.toFixed(1) : '?';
  return `p${op.process} [${op.start.toFixed(1)} .. ${end}] ${model.describe(op)}`;
}

/**
 * Shrinks an illegal partition: first to the operations that started before the first one the
 * search could not place ended, then by delta debugging (Zeller's ddmin), keeping only subsets
 * the model finds self-contained and that are still illegal.
 */
function shrink<S, I, O>(
  model: Model<S, I, O>,
  part: readonly Operation<I, O>[],
  longest: ReadonlySet<number>,
  deadline: number,
): { ops: readonly Operation<I, O>[]; minimal: boolean } {
  let timedOut = false;
  const illegal = (ops: readonly Operation<I, O>[]): boolean => {
    if (timedOut) return false;
    if (model.selfContained !== undefined && !model.selfContained(ops)) return false;
    const outcome = searchLinearization(model, ops, deadline);
    if (outcome.result === 'timeout') timedOut = true;
    return outcome.result === 'illegal';
  };
  let items: readonly Operation<I, O>[] = part;
  // The first operation left out of the longest linearization whose answer came earliest.
  let stuckEnd = Number.POSITIVE_INFINITY;
  part.forEach((op, i) => {
    if (!longest.has(i) && op.status === 'ok' && op.end < stuckEnd) stuckEnd = op.end;
  });
  const window = part.filter((op) => op.start <= stuckEnd);
  if (window.length < part.length && illegal(window)) items = window;
  let chunks = 2;
  while (items.length >= 2 && !timedOut) {
    const size = Math.ceil(items.length / chunks);
    let reduced = false;
    for (let i = 0; i < items.length; i += size) {
      const rest = [...items.slice(0, i), ...items.slice(i + size)];
      if (illegal(rest)) {
        items = rest;
        chunks = Math.max(chunks - 1, 2);
        reduced = true;
        break;
      }
    }
    if (!reduced) {
      if (chunks >= items.length) break;
      chunks = Math.min(chunks * 2, items.length);
    }
  }
  return { ops: items, minimal: !timedOut };
}
