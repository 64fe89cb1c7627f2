// Checks of caller input the client can judge on its own, before anything is sent. Rules that depend
// on server configuration (empty keys, size limits, op counts, duplicate keys) are left to the server
// so its typed errors reach the caller unchanged.
import { type Bytes, toBytes } from './bytes.js';
import { InvalidArgumentError } from './errors.js';

/** A key or value given as `string | Uint8Array`, as bytes. */
export function bytesArg(value: unknown, name: string): Uint8Array {
  if (typeof value === 'string' || value instanceof Uint8Array) return toBytes(value as Bytes);
  throw new InvalidArgumentError(
    `${name} must be a string or a Uint8Array, got ${describe(value)}`,
  );
}

/** An optional revision: absent means 0n (the current revision, or "no filter"). */
export function revisionArg(value: unknown, name: string): bigint {
  if (value === undefined) return 0n;
  if (typeof value !== 'bigint') {
    throw new InvalidArgumentError(`${name} must be a bigint, got ${describe(value)}`);
  }
  if (value < 0n) throw new InvalidArgumentError(`${name} must not be negative, got ${value}`);
  return value;
}

/** An optional non-negative count (a limit or a page size) given as a number or a bigint. */
export function countArg(value: unknown, name: string): bigint {
  if (value === undefined) return 0n;
  if (typeof value === 'number' && Number.isSafeInteger(value) && value >= 0) return BigInt(value);
  if (typeof value === 'bigint' && value >= 0n) return value;
  throw new InvalidArgumentError(`${name} must be a non-negative integer, got ${describe(value)}`);
}

/** An optional boolean flag. */
export function flagArg(value: unknown, name: string): boolean {
  if (value === undefined) return false;
  if (typeof value === 'boolean') return value;
  throw new InvalidArgumentError(`${name} must be a boolean, got ${describe(value)}`);
}

/** One of a fixed set of strings; `fallback` when absent. */
export function choiceArg<T extends string>(
  value: unknown,
  choices: readonly T[],
  fallback: T,
  name: string,
): T {
  if (value === undefined) return fallback;
  if (typeof value === 'string' && (choices as readonly string[]).includes(value))
    return value as T;
  throw new InvalidArgumentError(
    `${name} must be one of ${choices.map((c) => `'${c}'`).join(', ')}, got ${describe(value)}`,
  );
}

/** A plain options object, or `{}` when absent. */
export function objectArg<T extends object>(value: T | undefined, name: string): Partial<T> {
  if (value === undefined) return {};
  if (typeof value === 'object' && value !== null) return value;
  throw new InvalidArgumentError(`${name} must be an object, got ${describe(value)}`);
}

function describe(value: unknown): string {
  if (value === null) return 'null';
  if (typeof value === 'string') return JSON.stringify(value);
  if (typeof value === 'bigint') return `${value}n`;
  if (typeof value === 'object') return value.constructor?.name ?? 'object';
  return String(value);
}

/** A lease given by id or as an object carrying its id (such as a granted lease). */
export type LeaseRef = bigint | { readonly id: bigint };

/** The id of an optional lease; 0n (no lease) when absent. */
export function leaseArg(value: unknown, name: string): bigint {
  if (value === undefined) return 0n;
  if (typeof value === 'bigint') return value;
  if (typeof value === 'object' && value !== null && typeof Reflect.get(value, 'id') === 'bigint') {
    return Reflect.get(value, 'id') as bigint;
  }
  throw new InvalidArgumentError(
    `${name} must be a lease id (bigint) or an object with a bigint id, got ${describe(value)}`,
  );
}
