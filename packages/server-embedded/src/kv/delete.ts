// DeleteRange (etcd's txn/delete.go). Deleting nothing changes nothing: no new revision.

import {
  type DeleteRangeRequest,
  type DeleteRangeResponse,
  revisionHeader,
  toWireKeyValue,
} from '../api/requests.js';
import type { StoreWrite } from '../mvcc/store-write.js';
import { keyRangeOf } from './range.js';

/** Applies a delete within `write`; prev_kv returns the deleted key-values in key order. */
export function applyDeleteRange(write: StoreWrite, r: DeleteRangeRequest): DeleteRangeResponse {
  const range = keyRangeOf(r);
  const previous = r.prevKv ? write.range(range).kvs : undefined;
  const deleted = write.deleteRange(range);
  const response: DeleteRangeResponse = {
    // The write's revision: the next one if this or an earlier op of the txn changed something.
    header: revisionHeader(write.revision),
    deleted: BigInt(deleted),
  };
  if (previous !== undefined) response.prevKvs = previous.map((kv) => toWireKeyValue(kv));
  return response;
}
