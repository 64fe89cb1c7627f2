// The log's record format: what reads back, and how damage is told apart, a torn tail (cut) from
// damage in the middle (refused).
import { describe, expect, it } from 'vitest';
import { encodeRecord, scanSegment, segmentHeader } from '../../src/persistence/log-format.js';

const text = new TextEncoder();

/** A segment holding records 1..count (payload "change i"), and where each record starts. */
function segment(count: number, first = 1): { bytes: Uint8Array; starts: number[] } {
  const parts = [segmentHeader()];
  const starts: number[] = [];
  let offset = parts[0]!.length;
  for (let i = 0; i < count; i++) {
    const frame = encodeRecord(first + i, 'kv', text.encode(`change ${first + i}`));
    starts.push(offset);
    offset += frame.length;
    parts.push(frame);
  }
  return { bytes: Buffer.concat(parts), starts };
}

describe('log segments', () => {
  it('read back every record in order, with its state name and payload', () => {
    const { bytes } = segment(3, 7);
    const scanned = scanSegment(bytes, 7);
    expect(scanned.damage).toBeUndefined();
    expect(scanned.intactBytes).toBe(bytes.length);
    expect(
      scanned.records.map((r) => [r.sequence, r.state, Buffer.from(r.payload).toString()]),
    ).toEqual([
      [7, 'kv', 'change 7'],
      [8, 'kv', 'change 8'],
      [9, 'kv', 'change 9'],
    ]);
  });

  it('a record cut short at the end is a torn tail, cut where the last whole record ends', () => {
    const { bytes, starts } = segment(5);
    for (const cut of [starts[4]! + 3, starts[4]! + 12, bytes.length - 1]) {
      const scanned = scanSegment(bytes.subarray(0, cut), 1);
      expect(scanned.records).toHaveLength(4);
      expect(scanned.intactBytes).toBe(starts[4]);
      expect(scanned.damage).toMatchObject({ offset: starts[4], tail: true });
    }
  });

  it('zeros after the last record (space the file system allocated) are a torn tail', () => {
    const { bytes, starts } = segment(2);
    const padded = Buffer.concat([bytes, Buffer.alloc(4096)]);
    const scanned = scanSegment(padded, 1);
    expect(scanned.records).toHaveLength(2);
    expect(scanned.damage).toMatchObject({ offset: bytes.length, tail: true });
    expect(starts).toHaveLength(2);
  });

  it('a last record whose bytes were scrambled is a torn tail', () => {
    const { bytes, starts } = segment(3);
    const damaged = Buffer.from(bytes);
    damaged[starts[2]! + 14]! ^= 0xff;
    const scanned = scanSegment(damaged, 1);
    expect(scanned.records).toHaveLength(2);
    expect(scanned.damage).toMatchObject({
      offset: starts[2],
      reason: 'record checksum mismatch',
      tail: true,
    });
  });

  it('a damaged record followed by intact ones is damage in the middle, never a tail', () => {
    const { bytes, starts } = segment(6);
    for (const at of [starts[2]! + 14, starts[2]!, starts[2]! + 5]) {
      const damaged = Buffer.from(bytes);
      // In the body, in the length, in the checksum.
      damaged[at]! ^= 0x5a;
      const scanned = scanSegment(damaged, 1);
      expect(scanned.records).toHaveLength(2);
      expect(scanned.damage).toMatchObject({ offset: starts[2], tail: false });
    }
  });

  it('an intact record out of sequence is damage, not a tail', () => {
    const parts = [
      segmentHeader(),
      encodeRecord(1, 'kv', text.encode('a')),
      encodeRecord(3, 'kv', text.encode('c')),
    ];
    const scanned = scanSegment(Buffer.concat(parts), 1);
    expect(scanned.records).toHaveLength(1);
    expect(scanned.damage).toMatchObject({
      reason: 'record sequence 3 where 2 was expected',
      tail: false,
    });
  });

  it('a segment cut inside its header is torn; a wrong header is not a segment', () => {
    const header = segmentHeader();
    expect(scanSegment(header.subarray(0, 5), 1).damage).toMatchObject({ tail: true });
    expect(scanSegment(new Uint8Array(0), 1).damage).toMatchObject({ tail: true });
    const wrong = Buffer.concat([text.encode('NOT-A-WAL-FILE!!'), segment(1).bytes]);
    expect(scanSegment(wrong, 1).damage).toMatchObject({ offset: 0, tail: false });
  });
});
