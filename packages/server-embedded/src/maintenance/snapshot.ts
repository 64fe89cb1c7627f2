// The embedded server's snapshot: its own format (no bbolt file to send, so etcdctl snapshot
// restore cannot read it) in etcd's stream, whose SHA-256 trailer clients check; the layout is in
// docs/embedded-server.md, "Snapshot format".
import { createHash } from 'node:crypto';
import { type etcdserverpb, mvccpb } from '@etcdkit/client/protocol';
import type { HistoryEntry } from '../mvcc/history.js';
import type { KeyValue } from '../mvcc/types.js';

const MAGIC = new TextEncoder().encode('ETCDKIT-SNAPSHOT');
const FORMAT_VERSION = 1;
const PAGE_SIZE = 4096;
/** etcd sends snapshots in blobs of this size. */
export const SNAPSHOT_CHUNK_BYTES = 32 * 1024;
const Kind = { end: 0, metadata: 1, change: 2 } as const;

/** Everything in a snapshot besides the history. */
export interface SnapshotMetadata {
  /** The etcd version the server claimed. */
  readonly version: string;
  readonly clusterId: bigint;
  readonly memberId: bigint;
  /** The store's revision when the snapshot was taken. */
  readonly revision: number;
  /** The store's compaction revision; -1 if never compacted. */
  readonly compactRevision: number;
  readonly members: readonly SnapshotMember[];
  readonly leases: readonly { readonly id: bigint; readonly ttl: number }[];
  readonly alarms: readonly { readonly memberId: bigint; readonly type: number }[];
}

/** A cluster member as the snapshot records it. */
export interface SnapshotMember {
  readonly id: bigint;
  readonly name: string;
  readonly peerUrls: readonly string[];
  readonly clientUrls: readonly string[];
  readonly isLearner: boolean;
}

/** One kept change of the history. */
export interface SnapshotChange {
  readonly main: number;
  readonly sub: number;
  readonly tombstone: boolean;
  /** For a tombstone, only the key is meaningful. */
  readonly kv: KeyValue;
}

/** A decoded snapshot. */
export interface DecodedSnapshot {
  readonly metadata: SnapshotMetadata;
  readonly changes: readonly SnapshotChange[];
}

/** Encodes a snapshot (without the trailing digest). */
export function encodeSnapshot(
  metadata: SnapshotMetadata,
  history: Iterable<HistoryEntry>,
): Uint8Array {
  const parts: Uint8Array[] = [MAGIC, u32(FORMAT_VERSION)];
  const json = JSON.stringify(metadata, (_key, value: unknown) =>
    typeof value === 'bigint' ? value.toString() : value,
  );
  parts.push(...record(Kind.metadata, new TextEncoder().encode(json)));
  for (const entry of history) {
    const head = new Uint8Array(17);
    const view = new DataView(head.buffer);
    view.setBigUint64(0, BigInt(entry.revision.main));
    view.setBigUint64(8, BigInt(entry.revision.sub));
    head[16] = entry.tombstone ? 1 : 0;
    const kv = entry.tombstone
      ? mvccpb.KeyValue.encode({ key: entry.kv.key }).finish()
      : mvccpb.KeyValue.encode({
          key: entry.kv.key,
          createRevision: BigInt(entry.kv.createRevision),
          modRevision: BigInt(entry.kv.modRevision),
          version: BigInt(entry.kv.version),
          value: entry.kv.value,
          lease: entry.kv.lease,
        }).finish();
    parts.push(...record(Kind.change, head, kv));
  }
  parts.push(...record(Kind.end));
  const length = parts.reduce((n, part) => n + part.length, 0);
  const padded = new Uint8Array(Math.ceil(length / PAGE_SIZE) * PAGE_SIZE);
  let offset = 0;
  for (const part of parts) {
    padded.set(part, offset);
    offset += part.length;
  }
  return padded;
}

/** Decodes a snapshot's data (the bytes before the digest). Throws on anything malformed. */
export function decodeSnapshot(data: Uint8Array): DecodedSnapshot {
  const view = new DataView(data.buffer, data.byteOffset, data.byteLength);
  const fail = (why: string): never => {
    throw new Error(`not an etcdkit embedded snapshot: ${why}`);
  };
  if (data.length < MAGIC.length + 4) fail('too short');
  for (let i = 0; i < MAGIC.length; i++) if (data[i] !== MAGIC[i]) fail('wrong magic');
  const format = view.getUint32(MAGIC.length);
  if (format !== FORMAT_VERSION) fail(`format version ${format}`);
  let offset = MAGIC.length + 4;
  let metadata: SnapshotMetadata | undefined;
  const changes: SnapshotChange[] = [];
  for (;;) {
    if (offset + 5 > data.length) fail('truncated');
    const kind = data[offset]!;
    const length = view.getUint32(offset + 1);
    const payload = data.subarray(offset + 5, offset + 5 + length);
    if (payload.length !== length) fail('truncated record');
    offset += 5 + length;
    if (kind === Kind.end) break;
    if (kind === Kind.metadata) {
      metadata = parseMetadata(new TextDecoder().decode(payload));
    } else if (kind === Kind.change) {
      const head = new DataView(payload.buffer, payload.byteOffset, 17);
      const main = Number(head.getBigUint64(0));
      const sub = Number(head.getBigUint64(8));
      const tombstone = payload[16] === 1;
      const wire = mvccpb.KeyValue.decode(payload.subarray(17));
      changes.push({
        main,
        sub,
        tombstone,
        kv: {
          key: wire.key,
          value: wire.value,
          createRevision: Number(wire.createRevision),
          modRevision: tombstone ? main : Number(wire.modRevision),
          version: Number(wire.version),
          lease: wire.lease,
        },
      });
    } else {
      fail(`unknown record kind ${kind}`);
    }
  }
  if (metadata === undefined) return fail('no metadata');
  return { metadata, changes };
}

/**
 * The Snapshot stream's messages for `data`: chunks of at most 32 KiB with the bytes still to come
 * after each, then the SHA-256 of all of them with remaining 0.
 */
export function* snapshotMessages(
  data: Uint8Array,
  version: string,
): Generator<etcdserverpb.SnapshotResponse.$Properties> {
  const hash = createHash('sha256');
  for (let sent = 0; sent < data.length; ) {
    const blob = data.subarray(sent, sent + SNAPSHOT_CHUNK_BYTES);
    sent += blob.length;
    hash.update(blob);
    yield { remainingBytes: BigInt(data.length - sent), blob, version };
  }
  yield { remainingBytes: 0n, blob: new Uint8Array(hash.digest()), version };
}

function parseMetadata(json: string): SnapshotMetadata {
  const raw = JSON.parse(json) as {
    version: string;
    clusterId: string;
    memberId: string;
    revision: number;
    compactRevision: number;
    members: {
      id: string;
      name: string;
      peerUrls: string[];
      clientUrls: string[];
      isLearner: boolean;
    }[];
    leases: { id: string; ttl: number }[];
    alarms: { memberId: string; type: number }[];
  };
  return {
    version: raw.version,
    clusterId: BigInt(raw.clusterId),
    memberId: BigInt(raw.memberId),
    revision: raw.revision,
    compactRevision: raw.compactRevision,
    members: raw.members.map((m) => ({ ...m, id: BigInt(m.id) })),
    leases: raw.leases.map((l) => ({ id: BigInt(l.id), ttl: l.ttl })),
    alarms: raw.alarms.map((a) => ({ memberId: BigInt(a.memberId), type: a.type })),
  };
}

function u32(value: number): Uint8Array {
  const bytes = new Uint8Array(4);
  new DataView(bytes.buffer).setUint32(0, value);
  return bytes;
}

function record(kind: number, ...payload: Uint8Array[]): Uint8Array[] {
  const length = payload.reduce((n, part) => n + part.length, 0);
  const head = new Uint8Array(5);
  head[0] = kind;
  new DataView(head.buffer).setUint32(1, length);
  return [head, ...payload];
}
