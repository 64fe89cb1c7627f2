// Splitting a history into sub-histories a model can decide one by one.
import type { Operation } from '../history.js';

/** Splits a history by a key of each operation, keeping the order of invocation. */
export function partitionBy<T extends Operation>(
  history: readonly T[],
  keyOf: (op: T, index: number) => string,
): T[][] {
  const parts = new Map<string, T[]>();
  history.forEach((op, index) => {
    const key = keyOf(op, index);
    const part = parts.get(key);
    if (part === undefined) parts.set(key, [op]);
    else part.push(op);
  });
  return [...parts.values()];
}
