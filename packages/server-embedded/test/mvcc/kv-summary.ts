// A store KeyValue as plain text and numbers, for exact comparisons in the mvcc tests.
import type { KeyValue } from '../../src/mvcc/types.js';
import { text } from '../support/bytes.js';

/** What a test compares of a KeyValue. */
export interface KvSummary {
  key: string;
  value: string;
  create: number;
  mod: number;
  version: number;
  lease: bigint;
}

/** `kv`'s key and value as text, with its revisions, version and lease. */
export function kvSummary(kv: KeyValue): KvSummary {
  return {
    key: text(kv.key),
    value: text(kv.value),
    create: kv.createRevision,
    mod: kv.modRevision,
    version: kv.version,
    lease: kv.lease,
  };
}
