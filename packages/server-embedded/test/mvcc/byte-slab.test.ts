import { describe, expect, it } from 'vitest';
import { ByteSlab } from '../../src/mvcc/byte-slab.js';
import { b, text } from '../support/bytes.js';

describe('ByteSlab', () => {
  it('copies small byte strings into one shared chunk, apart from their source', () => {
    const slab = new ByteSlab();
    const source = b('hello');
    const first = slab.copy(source);
    const second = slab.copy(b('world'));
    source.fill(0);
    expect([text(first), text(second)]).toEqual(['hello', 'world']);
    expect(second.buffer).toBe(first.buffer);
    expect(second.byteOffset).toBe(first.byteOffset + 5);
  });

  it('starts a new chunk when one is full, and gives large copies their own buffer', () => {
    const slab = new ByteSlab();
    const first = slab.copy(new Uint8Array(1000).fill(1));
    for (let i = 0; i < 15; i++) slab.copy(new Uint8Array(1000).fill(2));
    // 16 KiB hold 16 copies of 1000 bytes and not a 17th.
    const seventeenth = slab.copy(new Uint8Array(1000).fill(3));
    expect(seventeenth.buffer).not.toBe(first.buffer);
    expect(seventeenth.every((byte) => byte === 3)).toBe(true);
    const large = slab.copy(new Uint8Array(1025).fill(4));
    expect(large.byteOffset).toBe(0);
    expect(large.buffer.byteLength).toBe(1025);
    expect(first.every((byte) => byte === 1)).toBe(true);
  });

  it('copies nothing for empty bytes', () => {
    expect(new ByteSlab().copy(new Uint8Array(0)).length).toBe(0);
  });
});
