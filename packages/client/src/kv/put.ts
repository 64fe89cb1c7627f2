// Writes of one key: the options of a Put request and the shape of its result.
import type { etcdserverpb } from '../generated/protocol.js';
import { type ResponseHeader, toResponseHeader } from '../header.js';
import { jsonReady } from '../json.js';
import { type KeyValue, toKeyValue } from '../key-value.js';
import type { KeyPrefix } from '../keys/namespace.js';
import { bytesArg, flagArg, type LeaseRef, leaseArg, objectArg } from '../validate.js';

/** Options of a put. */
export interface PutOptions {
  /**
   * Attach the key to this lease (an id, or a granted lease object): the key is deleted when the
   * lease expires or is revoked. Without it (and without `ignoreLease`) a put detaches the key from
   * any lease it had. An unknown lease fails with LeaseNotFoundError and nothing is written.
   */
  readonly lease?: LeaseRef;
  /** Return the key as it was before this put, in `prevKv`. Default false. */
  readonly prevKv?: boolean;
  /**
   * Keep the current value and change only the lease. The value argument must then be empty
   * (ValueProvidedError otherwise), and the key must exist (KeyNotFoundError otherwise).
   */
  readonly ignoreValue?: boolean;
  /**
   * Keep the key's current lease and change only the value. `lease` must then be absent
   * (LeaseProvidedError otherwise), and the key must exist (KeyNotFoundError otherwise).
   */
  readonly ignoreLease?: boolean;
}

/** The part of a put's result that is also reported inside a txn. */
export interface PutResponseBody {
  /** The key before the put, when `prevKv` was asked for and the key existed. */
  readonly prevKv?: KeyValue;
}

/** The result of {@link KV.put}. */
export interface PutResult extends PutResponseBody {
  /** `header.revision` is the revision this put created. */
  readonly header: ResponseHeader;
}

/** A validated put, independent of any namespace. */
export interface PutSpec {
  readonly key: Uint8Array;
  readonly fields: Omit<etcdserverpb.PutRequest.$Properties, 'key'>;
}

/** Validates a put. */
export function putSpec(key: unknown, value: unknown, options: PutOptions | undefined): PutSpec {
  const o = objectArg(options, 'options');
  return {
    key: bytesArg(key, 'key'),
    fields: {
      value: bytesArg(value, 'value'),
      lease: leaseArg(o.lease, 'lease'),
      prevKv: flagArg(o.prevKv, 'prevKv'),
      ignoreValue: flagArg(o.ignoreValue, 'ignoreValue'),
      ignoreLease: flagArg(o.ignoreLease, 'ignoreLease'),
    },
  };
}

/** The Put request for `spec` inside namespace `ns`. */
export function encodePut(spec: PutSpec, ns: KeyPrefix): etcdserverpb.PutRequest.$Properties {
  const f = spec.fields;
  return {
    key: ns.key(spec.key),
    value: f.value,
    lease: f.lease,
    prevKv: f.prevKv,
    ignoreValue: f.ignoreValue,
    ignoreLease: f.ignoreLease,
  };
}

/** The body of a Put response, keys relative to `ns`. */
export function decodePutBody(
  response: etcdserverpb.PutResponse.$Properties,
  ns: KeyPrefix,
): PutResponseBody {
  return response.prevKv ? { prevKv: toKeyValue(response.prevKv, (key) => ns.strip(key)) } : {};
}

/** A Put response, keys relative to `ns`. */
export function decodePut(
  response: etcdserverpb.PutResponse.$Properties,
  ns: KeyPrefix,
): PutResult {
  const header = toResponseHeader(response.header);
  const { prevKv } = decodePutBody(response, ns);
  return jsonReady(prevKv ? { header, prevKv } : { header });
}
