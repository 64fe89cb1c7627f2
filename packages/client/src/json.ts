// Results as JSON. JSON.stringify throws on a bigint, and every result carries revisions: results
// convert themselves the way etcd's own JSON gateway (the protobuf JSON mapping) writes them.

/**
 * A JSON-ready copy of `value`: bigints become decimal strings, bytes (`Uint8Array`) base64
 * strings, objects and arrays are copied with their fields converted (an object's own `toJSON` is
 * used when it has one), `undefined` fields and functions are left out. What JSON.stringify
 * gives for a result is JSON.stringify of this.
 *
 * @example
 * ```ts
 * const leases = toJSONValue(await etcd.lease.leases()); // ['7587869230934361604', ...]
 * ```
 */
export function toJSONValue(value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Uint8Array) return base64(value);
  if (Array.isArray(value)) return value.map((item) => toJSONValue(item) ?? null);
  if (value === null || typeof value !== 'object') return value;
  const own = (value as { toJSON?: unknown }).toJSON;
  if (typeof own !== 'function') return fieldsToJSON(value);
  const converted: unknown = own.call(value);
  return converted === value ? fieldsToJSON(value) : toJSONValue(converted);
}

/**
 * A replacer for `JSON.stringify(value, jsonReplacer)` that writes bigints as decimal strings
 * and bytes as base64, for values the client did not make (a bare `bigint[]`, your own objects).
 * Results of the client need no replacer.
 */
export function jsonReplacer(this: unknown, _key: string, value: unknown): unknown {
  if (typeof value === 'bigint') return value.toString();
  if (value instanceof Uint8Array) return base64(value);
  return value;
}

/**
 * Gives a plain result object a `toJSON` (not enumerable, so spreads, equality checks and
 * `Object.keys` do not see it), and returns the same object.
 */
export function jsonReady<T extends object>(result: T): T {
  Object.defineProperty(result, 'toJSON', TO_JSON);
  return result;
}

/** One descriptor for every result: each call's header gets one, so none is made per call. */
const TO_JSON: PropertyDescriptor = Object.freeze({
  value: fieldsToJSONMethod,
  enumerable: false,
  writable: true,
  configurable: true,
});

function fieldsToJSONMethod(this: object): Record<string, unknown> {
  return fieldsToJSON(this);
}

/** The object's own enumerable fields, converted; undefined ones and functions left out. */
export function fieldsToJSON(value: object): Record<string, unknown> {
  const out: Record<string, unknown> = {};
  for (const [name, field] of Object.entries(value)) {
    if (field === undefined || typeof field === 'function') continue;
    out[name] = toJSONValue(field);
  }
  return out;
}

function base64(bytes: Uint8Array): string {
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength).toString('base64');
}
