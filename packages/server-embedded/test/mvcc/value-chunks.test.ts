import { describe, expect, it } from 'vitest';
import { ValueChunks } from '../../src/mvcc/value-chunks.js';
import { b, text } from '../support/bytes.js';

describe('ValueChunks', () => {
  it('packs small values one after the other into a shared chunk, apart from their source', () => {
    const chunks = new ValueChunks();
    const source = b('hello');
    const first = chunks.add(source);
    const second = chunks.add(b('world'));
    source.fill(0);
    expect(second).toBe(first + 5);
    const [hello, world] = [chunks.view(first, 5), chunks.view(second, 5)];
    expect([text(hello), text(world)]).toEqual(['hello', 'world']);
    expect(world.buffer).toBe(hello.buffer);
  });

  it('starts a new chunk when one is full, and gives a large value a chunk of its own', () => {
    const chunks = new ValueChunks();
    const places = Array.from({ length: 17 }, (_, i) => chunks.add(new Uint8Array(1000).fill(i)));
    // 16 KiB hold 16 values of 1000 bytes and not a 17th.
    expect(places[16]).toBe(16 * 1024);
    const large = chunks.add(new Uint8Array(1025).fill(99));
    expect(large).toBe(2 * 16 * 1024);
    expect(chunks.view(large, 1025).buffer.byteLength).toBe(1025);
    places.forEach((place, i) => {
      expect(chunks.view(place, 1000).every((byte) => byte === i)).toBe(true);
    });
  });

  it('drops a chunk with its last value, but not the one being filled, and reuses its id', () => {
    const chunks = new ValueChunks();
    const full = Array.from({ length: 16 }, () => chunks.add(new Uint8Array(1000).fill(1)));
    const filling = chunks.add(new Uint8Array(1000).fill(2));
    for (const place of full.slice(1)) chunks.release(place);
    expect(chunks.view(full[0]!, 1000).every((byte) => byte === 1)).toBe(true);
    chunks.release(full[0]!);
    const large = chunks.add(new Uint8Array(2000).fill(3));
    // The first chunk's id is free again; the chunk being filled stays even with nothing kept.
    expect(large).toBe(0);
    chunks.release(filling);
    const next = chunks.add(b('after'));
    expect(next).toBe(16 * 1024 + 1000);
    expect(text(chunks.view(next, 5))).toBe('after');
  });
});
