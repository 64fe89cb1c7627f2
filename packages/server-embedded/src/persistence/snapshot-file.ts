// A data dir snapshot: every registered state's snapshot, taken between the same two log records,
// in one file that ends with the SHA-256 of everything before it. It is written to a temporary
// file, synced, then renamed into place, so a snapshot file is either whole or absent; a digest
// that does not match therefore means the disk damaged it, and the server refuses to start.
//
//   "ETCDKIT-DATASNAP" (16 bytes)  format version (u32)  last sequence (varint)
//   section count (varint), then per section: state name (string), snapshot (bytes)
//   SHA-256 of all the above (32 bytes)
import { createHash } from 'node:crypto';
import { ByteReader, ByteWriter, MalformedDataError } from './binary.js';

const MAGIC = new TextEncoder().encode('ETCDKIT-DATASNAP');
const FORMAT_VERSION = 1;
const DIGEST_BYTES = 32;

/** The states' snapshots as of one point of the log. */
export interface DataSnapshot {
  /** Sequence number of the last record the snapshot covers (0: none). */
  readonly sequence: number;
  /** Each state's snapshot by state name, in registration order. */
  readonly sections: ReadonlyMap<string, Uint8Array>;
}

/** Encodes a snapshot file. */
export function encodeDataSnapshot(snapshot: DataSnapshot): Uint8Array {
  const writer = new ByteWriter(1024)
    .raw(MAGIC)
    .u32(FORMAT_VERSION)
    .varint(snapshot.sequence)
    .varint(snapshot.sections.size);
  for (const [name, bytes] of snapshot.sections) writer.string(name).bytes(bytes);
  const body = writer.finish();
  const file = new Uint8Array(body.length + DIGEST_BYTES);
  file.set(body);
  file.set(createHash('sha256').update(body).digest(), body.length);
  return file;
}

/** Decodes a snapshot file; throws MalformedDataError when it is damaged or not one. */
export function decodeDataSnapshot(file: Uint8Array): DataSnapshot {
  if (file.length < MAGIC.length + 4 + DIGEST_BYTES) throw new MalformedDataError('too short');
  const body = file.subarray(0, file.length - DIGEST_BYTES);
  const digest = createHash('sha256').update(body).digest();
  if (!digest.equals(file.subarray(file.length - DIGEST_BYTES))) {
    throw new MalformedDataError('SHA-256 digest mismatch');
  }
  for (let i = 0; i < MAGIC.length; i++) {
    if (body[i] !== MAGIC[i]) throw new MalformedDataError('not a data dir snapshot');
  }
  const reader = new ByteReader(body.subarray(MAGIC.length));
  const format = reader.u32();
  if (format !== FORMAT_VERSION) throw new MalformedDataError(`unknown format version ${format}`);
  const sequence = reader.varint();
  const count = reader.varint();
  const sections = new Map<string, Uint8Array>();
  for (let i = 0; i < count; i++) sections.set(reader.string(), reader.bytes());
  reader.end();
  return { sequence, sections };
}
