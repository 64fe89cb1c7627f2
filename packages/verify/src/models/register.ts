// A key as a register: get, put, and compare-and-set on its value or on its mod_revision.
import type { Model } from '../checker/model.js';
import { partitionBy } from '../checker/partition.js';
import type { Operation } from '../history.js';

/** A request to one key of a register history. `undefined` values mean "the key is absent". */
export type RegisterInput =
  | { readonly type: 'get'; readonly key: string }
  | { readonly type: 'put'; readonly key: string; readonly value: string }
  | {
      /** Compare-and-set on the value: put `value` if the key holds `expect`. */
      readonly type: 'cas';
      readonly key: string;
      readonly expect: string | undefined;
      readonly value: string;
    }
  | {
      /**
       * Compare-and-set on mod_revision: put `value` if the key's mod_revision is
       * `expectRevision`. `expectValue` is the value read with that revision; the model compares
       * it when the revision of the current state is not known (after an unknown write).
       */
      readonly type: 'casRevision';
      readonly key: string;
      readonly expectRevision: bigint;
      readonly expectValue: string | undefined;
      readonly value: string;
    };

/** The answer to a {@link RegisterInput}. */
export type RegisterOutput =
  | { readonly type: 'get'; readonly value: string | undefined; readonly modRevision: bigint }
  | { readonly type: 'put'; readonly revision: bigint }
  | {
      readonly type: 'cas';
      readonly succeeded: boolean;
      /** The txn's header revision: the write's revision when it succeeded. */
      readonly revision: bigint;
      /**
       * When it failed, the key as the txn's else branch read it. With it a failed CAS is a read,
       * and unknown writes nobody saw can be left out of the search.
       */
      readonly current?: { readonly value: string | undefined; readonly modRevision: bigint };
    };

/** A register's state: its value and mod_revision (`undefined` when not known). */
export interface RegisterState {
  readonly value: string | undefined;
  readonly revision: bigint | undefined;
}

/** An operation of a register history. */
export type RegisterOperation = Operation<RegisterInput, RegisterOutput>;

/**
 * The register model: one independent register per key (a history is split by key), each
 * starting absent with mod_revision 0. Reads must return the last value written and its
 * revision; each write's revision must exceed the previous one's.
 */
export function registerModel(
  initial: RegisterState = { value: undefined, revision: 0n },
): Model<RegisterState, RegisterInput, RegisterOutput> {
  return {
    name: 'register',
    init: () => initial,
    step: stepRegister,
    hash: (s) => `${s.value ?? '\u0000'}@${s.revision ?? '?'}`,
    equal: (a, b) => a.value === b.value && a.revision === b.revision,
    partition: (history) => partitionBy(history, (op) => op.input.key),
    prepare: prepareRegister,
    selfContained: (ops) => {
      const written = new Set<string | undefined>([initial.value]);
      for (const op of ops) if (op.input.type !== 'get') written.add(op.input.value);
      return ops.every((op) => {
        if (op.status !== 'ok') return true;
        const { input, output } = op;
        if (input.type === 'get' && output?.type === 'get') return written.has(output.value);
        if (input.type === 'cas' && output?.type === 'cas' && output.succeeded)
          return written.has(input.expect);
        if (input.type === 'casRevision' && output?.type === 'cas' && output.succeeded)
          return written.has(input.expectValue);
        if (output?.type === 'cas' && output.current !== undefined)
          return written.has(output.current.value);
        return true;
      });
    },
    describe: describeRegisterOp,
  };
}

function stepRegister(
  s: RegisterState,
  input: RegisterInput,
  output: RegisterOutput | undefined,
): RegisterState | undefined {
  switch (input.type) {
    case 'get': {
      if (output === undefined) return s;
      if (output.type !== 'get' || output.value !== s.value) return undefined;
      if (s.revision !== undefined && s.revision !== output.modRevision) return undefined;
      return s.revision === output.modRevision
        ? s
        : { value: s.value, revision: output.modRevision };
    }
    case 'put':
      return write(s, input.value, output?.type === 'put' ? output.revision : undefined);
    case 'cas':
    case 'casRevision': {
      const holds =
        input.type === 'cas'
          ? s.value === input.expect
          : s.revision !== undefined
            ? s.revision === input.expectRevision
            : s.value === input.expectValue;
      if (output === undefined) return holds ? write(s, input.value, undefined) : s;
      if (output.type !== 'cas' || output.succeeded !== holds) return undefined;
      if (holds) return write(s, input.value, output.revision);
      return output.current === undefined
        ? s
        : read(s, output.current.value, output.current.modRevision);
    }
  }
}

function read(
  s: RegisterState,
  value: string | undefined,
  modRevision: bigint,
): RegisterState | undefined {
  if (value !== s.value) return undefined;
  if (s.revision !== undefined && s.revision !== modRevision) return undefined;
  return s.revision === modRevision ? s : { value, revision: modRevision };
}

function write(
  s: RegisterState,
  value: string,
  revision: bigint | undefined,
): RegisterState | undefined {
  if (revision !== undefined && s.revision !== undefined && revision <= s.revision)
    return undefined;
  return { value, revision };
}

/**
 * Bounds unknown writes by what was observed, assuming each write writes a value no other write
 * does (the workloads make sure): a write whose value some operation saw must take effect before
 * that operation ended; one whose value nobody saw changed nothing anyone can tell, as long as
 * every failed CAS reported what it found, so it is left out.
 */
function prepareRegister(ops: readonly RegisterOperation[]): RegisterOperation[] {
  const seenBy = new Map<string | undefined, number>();
  let blindFailures = false;
  const saw = (value: string | undefined, end: number) =>
    seenBy.set(value, Math.min(end, seenBy.get(value) ?? Number.POSITIVE_INFINITY));
  for (const op of ops) {
    if (op.status !== 'ok' || op.output === undefined) continue;
    const { input, output } = op;
    if (output.type === 'get') saw(output.value, op.end);
    else if (output.type === 'cas' && output.succeeded)
      saw(
        input.type === 'cas'
          ? input.expect
          : input.type === 'casRevision'
            ? input.expectValue
            : undefined,
        op.end,
      );
    else if (output.type === 'cas' && output.current !== undefined)
      saw(output.current.value, op.end);
    else if (output.type === 'cas') blindFailures = true;
  }
  const out: RegisterOperation[] = [];
  for (const op of ops) {
    if (op.status !== 'unknown' || op.input.type === 'get') {
      out.push(op);
      continue;
    }
    const seen = seenBy.get(op.input.value);
    if (seen !== undefined) out.push(seen < op.end ? { ...op, end: seen } : op);
    else if (blindFailures) out.push(op);
  }
  return out;
}

function describeRegisterOp(op: RegisterOperation): string {
  const { input, output } = op;
  const show = (v: string | undefined) => (v === undefined ? 'nil' : JSON.stringify(v));
  const request =
    input.type === 'get'
      ? `get ${input.key}`
      : input.type === 'put'
        ? `put ${input.key}=${show(input.value)}`
        : input.type === 'cas'
          ? `cas ${input.key} ${show(input.expect)}->${show(input.value)}`
          : `cas ${input.key} rev ${input.expectRevision}->${show(input.value)}`;
  if (op.status !== 'ok' || output === undefined) return `${request} -> ${op.status}`;
  const answer =
    output.type === 'get'
      ? `${show(output.value)} (mod ${output.modRevision})`
      : output.type === 'put'
        ? `ok (rev ${output.revision})`
        : output.succeeded
          ? `succeeded (rev ${output.revision})`
          : `failed, found ${output.current === undefined ? '?' : `${show(output.current.value)} (mod ${output.current.modRevision})`}`;
  return `${request} -> ${answer}`;
}
