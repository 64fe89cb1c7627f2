// A history: what each process asked for, when, and what it was told.

/**
 * How an operation ended. `ok`: it took effect and the answer is known. `fail`: it certainly did
 * not take effect (the server rejected it, or it was never sent). `unknown`: it may have taken
 * effect at any moment after its start, or never (a lost connection, a deadline, OutcomeUnknownError).
 */
export type OperationStatus = 'ok' | 'fail' | 'unknown';

/** One completed (or abandoned) operation of a history. */
export interface Operation<I = unknown, O = unknown> {
  /** Position in the history, 0-based, in order of invocation. */
  readonly id: number;
  /** The process (client, worker) that ran it; a process runs one operation at a time. */
  readonly process: number;
  /** What was asked, in the model's terms. */
  readonly input: I;
  /** The answer, when `status` is `ok`. */
  readonly output: O | undefined;
  readonly status: OperationStatus;
  /** Monotonic time of invocation, in ms (the recorder's clock, CLOCK_MONOTONIC by default). */
  readonly start: number;
  /**
   * Monotonic time of the answer, in ms; `Infinity` for `unknown` (the operation may take effect
   * at any time after its start).
   */
  readonly end: number;
  /** Why it failed or is unknown: the error's name and message. */
  readonly error?: string;
}

/** Operations in order of invocation. */
export type History<I = unknown, O = unknown> = readonly Operation<I, O>[];

/** An {@link Operation} as JSON: `end` is `null` for `Infinity`. */
export interface OperationJson {
  readonly id: number;
  readonly process: number;
  readonly input: unknown;
  readonly output?: unknown;
  readonly status: OperationStatus;
  readonly start: number;
  readonly end: number | null;
  readonly error?: string;
}

/** A history as JSON (bigints become strings tagged `n`, e.g. `"12n"`). */
export function historyToJson(history: History): OperationJson[] {
  return history.map((op) => ({
    id: op.id,
    process: op.process,
    input: toJsonValue(op.input),
    ...(op.output === undefined ? {} : { output: toJsonValue(op.output) }),
    status: op.status,
    start: op.start,
    end: Number.isFinite(op.end) ? op.end : null,
    ...(op.error === undefined ? {} : { error: op.error }),
  }));
}

/** Reads back what {@link historyToJson} wrote. */
export function historyFromJson(json: readonly OperationJson[]): Operation[] {
  return json.map((op) => ({
    id: op.id,
    process: op.process,
    input: fromJsonValue(op.input),
    output: op.output === undefined ? undefined : fromJsonValue(op.output),
    status: op.status,
    start: op.start,
    end: op.end === null ? Number.POSITIVE_INFINITY : op.end,
    ...(op.error === undefined ? {} : { error: op.error }),
  }));
}

/** A value made JSON-safe: bigints as `"<digits>n"`, undefined object fields dropped. */
export function toJsonValue(value: unknown): unknown {
  if (typeof value === 'bigint') return `${value}n`;
  if (Array.isArray(value)) return value.map(toJsonValue);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) if (v !== undefined) out[k] = toJsonValue(v);
    return out;
  }
  return value;
}

function fromJsonValue(value: unknown): unknown {
  if (typeof value === 'string' && /^-?\d+n$/.test(value)) return BigInt(value.slice(0, -1));
  if (Array.isArray(value)) return value.map(fromJsonValue);
  if (value !== null && typeof value === 'object') {
    const out: Record<string, unknown> = {};
    for (const [k, v] of Object.entries(value)) out[k] = fromJsonValue(v);
    return out;
  }
  return value;
}
