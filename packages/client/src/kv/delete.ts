// Deletes of a key or a range: the options of a DeleteRange request and the shape of its result.
import type { etcdserverpb } from '../generated/protocol.js';
import { type ResponseHeader, toResponseHeader } from '../header.js';
import { jsonReady } from '../json.js';
import { type KeyValue, toKeyValue } from '../key-value.js';
import { type Interval, toInterval } from '../keys/key-range.js';
import type { KeyPrefix } from '../keys/namespace.js';
import { flagArg, objectArg } from '../validate.js';

/** Options of a delete. */
export interface DeleteOptions {
  /** Return the deleted keys as they were, in `prevKvs`. Default false. */
  readonly prevKv?: boolean;
}

/** The part of a delete's result that is also reported inside a txn. */
export interface DeleteResponseBody {
  /** How many keys were deleted. */
  readonly deleted: bigint;
  /** The deleted keys in key order, when `prevKv` was asked for; empty otherwise. */
  readonly prevKvs: KeyValue[];
}

/** The result of {@link KV.delete}. */
export interface DeleteResult extends DeleteResponseBody {
  /**
   * `header.revision` is the revision the delete created, or the unchanged current revision when
   * nothing matched (deleting nothing is not a write).
   */
  readonly header: ResponseHeader;
}

/** A validated delete, independent of any namespace. */
export interface DeleteSpec {
  readonly interval: Interval;
  readonly prevKv: boolean;
}

/** Validates a delete. */
export function deleteSpec(selector: unknown, options: DeleteOptions | undefined): DeleteSpec {
  const o = objectArg(options, 'options');
  return { interval: toInterval(selector), prevKv: flagArg(o.prevKv, 'prevKv') };
}

/** The DeleteRange request for `spec` inside namespace `ns`. */
export function encodeDelete(
  spec: DeleteSpec,
  ns: KeyPrefix,
): etcdserverpb.DeleteRangeRequest.$Properties {
  return { ...ns.interval(spec.interval), prevKv: spec.prevKv };
}

/** The body of a DeleteRange response, keys relative to `ns`. */
export function decodeDeleteBody(
  response: etcdserverpb.DeleteRangeResponse.$Properties,
  ns: KeyPrefix,
): DeleteResponseBody {
  return {
    deleted: response.deleted ?? 0n,
    prevKvs: (response.prevKvs ?? []).map((kv) => toKeyValue(kv, (key) => ns.strip(key))),
  };
}

/** A DeleteRange response, keys relative to `ns`. */
export function decodeDelete(
  response: etcdserverpb.DeleteRangeResponse.$Properties,
  ns: KeyPrefix,
): DeleteResult {
  return jsonReady({
    header: toResponseHeader(response.header),
    ...decodeDeleteBody(response, ns),
  });
}
