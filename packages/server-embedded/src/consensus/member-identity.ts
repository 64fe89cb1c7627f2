// The identity of the one member this server pretends to be. etcd derives its ids from hashes of
// the peer URLs and cluster token; here they are random per server (or given), which clients
// cannot tell apart: they only ever compare ids with each other.
import { randomBytes } from 'node:crypto';

/** Who this member is, as MemberList, Status and every response header report it. */
export interface MemberIdentity {
  readonly clusterId: bigint;
  readonly memberId: bigint;
  /** `--name`; etcd's default is "default". */
  readonly name: string;
  readonly peerUrls: readonly string[];
  readonly clientUrls: readonly string[];
}

/** A random non-zero 64-bit id. */
export function randomId(): bigint {
  for (;;) {
    const id = randomBytes(8).readBigUInt64BE();
    if (id !== 0n) return id;
  }
}
