// One stored key as etcd returns it: bytes plus the revisions that tell its history.
import { plainBytes, toText } from './bytes.js';
import type { mvccpb } from './generated/protocol.js';
import { fieldsToJSON } from './json.js';

/** The fields of a {@link KeyValue}. */
export interface KeyValueFields {
  readonly key: Uint8Array;
  readonly value: Uint8Array;
  readonly createRevision: bigint;
  readonly modRevision: bigint;
  readonly version: bigint;
  readonly lease: bigint;
}

/**
 * What JSON.stringify writes for a {@link KeyValue}: bytes as base64 and numbers as decimal
 * strings, the way etcd's JSON gateway and `etcdctl -w json` write keys and values.
 */
export interface KeyValueJSON {
  readonly key: string;
  readonly value: string;
  readonly createRevision: string;
  readonly modRevision: string;
  readonly version: string;
  readonly lease: string;
}

/**
 * A key and its value at some revision, as returned by reads, `prevKv` options and txns.
 *
 * Keys read through a namespace are relative to it (the namespace prefix is stripped).
 */
export class KeyValue implements KeyValueFields {
  /** The key, as bytes. */
  readonly key: Uint8Array;
  /** The value, as bytes. Empty when the read asked for `keysOnly`. */
  readonly value: Uint8Array;
  /** Revision of the put that created the key (since its last delete). */
  readonly createRevision: bigint;
  /** Revision of the last put to the key. */
  readonly modRevision: bigint;
  /** Number of puts since the key was created: 1 after the first put; a delete resets it. */
  readonly version: bigint;
  /** Id of the lease the key is attached to; 0n when none. */
  readonly lease: bigint;

  constructor(fields: KeyValueFields) {
    this.key = fields.key;
    this.value = fields.value;
    this.createRevision = fields.createRevision;
    this.modRevision = fields.modRevision;
    this.version = fields.version;
    this.lease = fields.lease;
  }

  /** The key decoded as UTF-8. */
  keyText(): string {
    return toText(this.key);
  }

  /** The value decoded as UTF-8. */
  text(): string {
    return toText(this.value);
  }

  /**
   * The value decoded as UTF-8 and parsed as JSON. The type parameter is not checked: validate the
   * result if the value may come from elsewhere. Throws a SyntaxError when the value is not JSON.
   */
  json<T = unknown>(): T {
    return JSON.parse(this.text()) as T;
  }

  /**
   * The JSON form, which JSON.stringify uses: key and value in base64 (bytes need not be text),
   * revisions, version and lease as decimal strings (JSON numbers lose precision above 2^53).
   */
  toJSON(): KeyValueJSON {
    return fieldsToJSON(this) as unknown as KeyValueJSON;
  }
}

/**
 * Builds a KeyValue from a decoded protocol message. `key` maps the stored key to the one the
 * caller sees (a namespace strips its prefix).
 */
export function toKeyValue(
  kv: mvccpb.KeyValue.$Properties,
  key: (stored: Uint8Array) => Uint8Array,
): KeyValue {
  return new KeyValue({
    key: key(plainBytes(kv.key)),
    value: plainBytes(kv.value),
    createRevision: kv.createRevision ?? 0n,
    modRevision: kv.modRevision ?? 0n,
    version: kv.version ?? 0n,
    lease: kv.lease ?? 0n,
  });
}
