// Recording a history as a program runs: invoke, then ok, fail or unknown.
import { EtcdError } from '@etcdkit/client';
import type { Operation, OperationStatus } from './history.js';

/** Options of {@link Recorder}. */
export interface RecorderOptions {
  /**
   * Monotonic clock in ms. Default {@link systemMonotonicMs}, shared by every process of the
   * machine, so histories recorded by several processes can be merged.
   */
  readonly now?: () => number;
}

/** CLOCK_MONOTONIC in ms: one clock for every process of the machine (`process.hrtime`). */
export function systemMonotonicMs(): number {
  return Number(process.hrtime.bigint()) / 1e6;
}

/** An operation invoked and not yet answered; complete it exactly once. */
export interface PendingOperation<O> {
  /** It took effect and this is the answer. */
  ok(output: O): void;
  /** It certainly did not take effect. */
  fail(error?: unknown): void;
  /** It may have taken effect at any point after its start. */
  unknown(error?: unknown): void;
}

/**
 * Error codes after which a write certainly did not take effect: the server (or the client,
 * before sending) rejected the request itself. Any other failure of a write leaves its outcome
 * unknown.
 */
const REJECTED = new Set<string>([
  'EMPTY_KEY',
  'KEY_NOT_FOUND',
  'VALUE_PROVIDED',
  'LEASE_PROVIDED',
  'TOO_MANY_TXN_OPS',
  'DUPLICATE_KEY',
  'INVALID_SORT_OPTION',
  'COMPACTED',
  'FUTURE_REVISION',
  'NO_SPACE',
  'LEASE_NOT_FOUND',
  'REQUEST_TOO_LARGE',
  'INVALID_ARGUMENT',
  'PERMISSION_DENIED',
]);

/**
 * What a failure means for the operation: reads never take effect, so a failed read is `fail`;
 * a write is `fail` only when it was rejected (bad request), otherwise `unknown`
 * (OutcomeUnknownError, deadlines, lost connections, leader changes...).
 */
export function classifyFailure(error: unknown, effect: 'read' | 'write'): OperationStatus {
  if (effect === 'read') return 'fail';
  return error instanceof EtcdError && REJECTED.has(error.code) ? 'fail' : 'unknown';
}

/**
 * Collects a history. Each call costs two clock reads (start, end), a few small objects (the
 * operation, replaced on completion, and its completion closures) and an array slot;
 * `npm run bench verify` measures it against the same workload unrecorded.
 *
 * @example
 * ```ts
 * const recorder = new Recorder<RegisterInput, RegisterOutput>();
 * const out = await recorder.run(0, { type: 'get', key: 'a' }, 'read', async () => {
 *   const kv = await etcd.get('a');
 *   return { type: 'get', value: kv?.valueText(), modRevision: kv?.modRevision ?? 0n };
 * });
 * checkLinearizable(registerModel(), recorder.history());
 * ```
 */
export class Recorder<I, O> {
  readonly #now: () => number;
  readonly #ops: Operation<I, O>[] = [];
  readonly #running = new Set<number>();

  /** A recorder with an empty history. */
  constructor(options: RecorderOptions = {}) {
    this.#now = options.now ?? systemMonotonicMs;
  }

  /** The time now on this recorder's clock: what {@link invoke} takes to backdate. */
  now(): number {
    return this.#now();
  }

  /** Operations recorded so far, invoked ones included. */
  get size(): number {
    return this.#ops.length;
  }

  /**
   * Marks the invocation of `input` by `process`; complete the returned operation once. `start`
   * (a time of this recorder's clock) backdates it, when the input is only known after the
   * operation began (a critical section records what it read).
   */
  invoke(process: number, input: I, start: number = this.#now()): PendingOperation<O> {
    const id = this.#ops.length;
    // Until it completes it stands in the history as unknown: it may yet take effect.
    this.#ops.push({
      id,
      process,
      input,
      output: undefined,
      status: 'unknown',
      start,
      end: Number.POSITIVE_INFINITY,
    });
    this.#running.add(id);
    const complete = (status: OperationStatus, output: O | undefined, error: unknown) => {
      if (!this.#running.delete(id)) throw new Error(`operation ${id} was already completed`);
      this.#ops[id] = {
        id,
        process,
        input,
        output,
        status,
        start,
        end: status === 'unknown' ? Number.POSITIVE_INFINITY : this.#now(),
        ...(error === undefined ? {} : { error: describeError(error) }),
      };
    };
    return {
      ok: (output) => complete('ok', output, undefined),
      fail: (error) => complete('fail', undefined, error),
      unknown: (error) => complete('unknown', undefined, error),
    };
  }

  /**
   * Runs `action` as one operation: `ok` with its result, or on error `fail`/`unknown` as
   * {@link classifyFailure} says for `effect` (or `classify`, if given); the error is rethrown.
   */
  async run(
    process: number,
    input: I,
    effect: 'read' | 'write',
    action: () => Promise<O>,
    classify: (error: unknown) => OperationStatus = (e) => classifyFailure(e, effect),
  ): Promise<O> {
    const pending = this.invoke(process, input);
    let output: O;
    try {
      output = await action();
    } catch (error) {
      if (classify(error) === 'fail') pending.fail(error);
      else pending.unknown(error);
      throw error;
    }
    pending.ok(output);
    return output;
  }

  /**
   * The history so far, in order of invocation. Operations still running count as `unknown`
   * (they may yet take effect).
   */
  history(): Operation<I, O>[] {
    return this.#ops.slice();
  }
}

function describeError(error: unknown): string {
  if (error instanceof Error) return `${error.name}: ${error.message}`;
  return String(error);
}
