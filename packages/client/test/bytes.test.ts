import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { toBytes } from '../src/bytes.js';

const encoder = new TextEncoder();

describe('toBytes', () => {
  it('encodes any string as TextEncoder does (UTF-8, a lone surrogate as U+FFFD), as a plain Uint8Array', () => {
    const text = fc.oneof(
      fc.string({ maxLength: 80 }),
      fc.string({ unit: 'binary', maxLength: 80 }),
      fc.string({
        unit: fc.integer({ min: 0, max: 0xffff }).map((c) => String.fromCharCode(c)),
        maxLength: 70,
      }),
    );
    fc.assert(
      fc.property(text, (value) => {
        const bytes = toBytes(value);
        expect(Object.getPrototypeOf(bytes)).toBe(Uint8Array.prototype);
        expect([...bytes]).toEqual([...encoder.encode(value)]);
      }),
      { numRuns: 2000 },
    );
  });

  it('copies short ASCII, long strings and a non-ASCII character at the end alike', () => {
    expect([...toBytes('')]).toEqual([]);
    expect([...toBytes('a/b')]).toEqual([0x61, 0x2f, 0x62]);
    expect([...toBytes('\x7f')]).toEqual([0x7f]);
    expect([...toBytes(`${'k'.repeat(63)}é`)]).toEqual([...encoder.encode(`${'k'.repeat(63)}é`)]);
    expect(toBytes('x'.repeat(64)).length).toBe(64);
    expect(toBytes('x'.repeat(65)).length).toBe(65);
  });

  it('passes bytes through without copying', () => {
    const bytes = new Uint8Array([1, 2, 3]);
    expect(toBytes(bytes)).toBe(bytes);
  });
});
