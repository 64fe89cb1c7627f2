// The embedded server's snapshot: its own format (no bbolt file to send, so etcdctl snapshot
// restore cannot read it) in etcd's stream, whose SHA-256 trailer clients check; the layout is in
// docs/embedded-server.md, "Snapshot format".
import { createHash } from 'node:crypto';
import { type etcdserverpb, mvccpb } from '@etcdkit/client/protocol';
import type { ChangeVisitor } from '../mvcc/history.js';
import { keyValueSize, ProtoWriter, varintSize, writeKeyValue } from '../mvcc/kv-encoding.js';
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

/** Where a snapshot's changes come from: the store's history (MvccStore.history). */
export interface SnapshotHistory {
  /** About the bytes of the kept changes' backend records: the buffer is made this big at once. */
  readonly bytes: number;
  /** Hands `visitor` every kept change up to revision `main`, in revision order. */
  visitUpTo(main: number, visitor: ChangeVisitor): void;
}

/**
 * Encodes a snapshot (without the trailing digest) of `history` up to `metadata.revision`. Each
 * change is written from the history's fields into one buffer: a snapshot of 200,000 keys made
 * no object per change (issue 28's streamed snapshot row).
 */
export function encodeSnapshot(metadata: SnapshotMetadata, history: SnapshotHistory): Uint8Array {
  const json = JSON.stringify(metadata, (_key, value: unknown) =>
    typeof value === 'bigint' ? value.toString() : value,
  );
  const jsonBytes = new TextEncoder().encode(json);
  // A change's record is about its backend size plus its 5-byte head: the buffer rarely grows.
  const out = new ProtoWriter(pages(Math.ceil(history.bytes * 1.2) + jsonBytes.length + PAGE_SIZE));
  out.reserve(MAGIC.length + 4 + RECORD_HEAD_BYTES + jsonBytes.length);
  out.raw(MAGIC, 0, MAGIC.length);
  writeU32(out, FORMAT_VERSION);
  writeRecordHead(out, Kind.metadata, jsonBytes.length);
  out.raw(jsonBytes, 0, jsonBytes.length);
  history.visitUpTo(metadata.revision, {
    change(_key, sub, tombstone, kv) {
      // A tombstone's kv is its key alone, as protobufjs encodes { key }.
      const kvSize = tombstone ? keyOnlySize(kv.key.length) : keyValueSize(kv);
      out.reserve(RECORD_HEAD_BYTES + CHANGE_HEAD_BYTES + kvSize);
      writeRecordHead(out, Kind.change, CHANGE_HEAD_BYTES + kvSize);
      writeU64(out, kv.modRevision);
      writeU64(out, sub);
      out.bytes[out.length++] = tombstone ? 1 : 0;
      if (!tombstone) writeKeyValue(out, kv);
      else if (kv.key.length > 0) {
        out.bytes[out.length++] = KEY_TAG;
        out.varint(kv.key.length);
        out.raw(kv.key, 0, kv.key.length);
      }
    },
  });
  out.reserve(RECORD_HEAD_BYTES);
  writeRecordHead(out, Kind.end, 0);
  // Padded with zeros to whole pages, as the format has always been: the buffer's bytes past
  // `length` are zeros still. A buffer much bigger than that is copied rather than kept.
  const size = pages(out.length);
  if (out.bytes.length >= size && out.bytes.length - size <= size / 4) {
    return out.bytes.subarray(0, size);
  }
  const padded = new Uint8Array(size);
  padded.set(out.bytes.subarray(0, out.length));
  return padded;
}

/** `length` rounded up to whole pages. */
function pages(length: number): number {
  return Math.ceil(length / PAGE_SIZE) * PAGE_SIZE;
}

/** A record's kind and payload length. */
const RECORD_HEAD_BYTES = 5;
/** A change's main and sub revisions (u64 each) and its tombstone flag. */
const CHANGE_HEAD_BYTES = 17;
/** KeyValue.key: field 1, length-delimited. */
const KEY_TAG = (1 << 3) | 2;

function keyOnlySize(keyLength: number): number {
  return keyLength === 0 ? 0 : 1 + varintSize(keyLength) + keyLength;
}

function writeRecordHead(out: ProtoWriter, kind: number, length: number): void {
  out.bytes[out.length++] = kind;
  writeU32(out, length);
}

/** Big-endian, as DataView.setUint32 writes it. */
function writeU32(out: ProtoWriter, value: number): void {
  const bytes = out.bytes;
  const at = out.length;
  bytes[at] = value >>> 24;
  bytes[at + 1] = (value >>> 16) & 255;
  bytes[at + 2] = (value >>> 8) & 255;
  bytes[at + 3] = value & 255;
  out.length = at + 4;
}

/** Big-endian u64 of a revision (below 2^53), as DataView.setBigUint64 writes it. */
function writeU64(out: ProtoWriter, value: number): void {
  writeU32(out, Math.floor(value / 2 ** 32));
  writeU32(out, value >>> 0);
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
