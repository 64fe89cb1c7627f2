import { describe, expect, it } from 'vitest';
import { ChunkQueue } from '../../src/transport/h2/chunk-queue.js';

describe('ChunkQueue', () => {
  it('gives a view of one chunk, and copies only a piece that spans chunks', () => {
    const queue = new ChunkQueue();
    const first = Buffer.from('abcde');
    queue.push(first);
    queue.push(Buffer.alloc(0));
    queue.push(Buffer.from('fgh'));
    queue.push(Buffer.from('ij'));
    expect(queue.length).toBe(10);

    const view = queue.take(2);
    expect(view.toString()).toBe('ab');
    expect(view.buffer).toBe(first.buffer);
    expect(view.byteOffset).toBe(first.byteOffset);

    expect(queue.take(3).toString()).toBe('cde');
    expect(queue.take(4).toString()).toBe('fghi');
    expect(queue.length).toBe(1);
    expect(queue.take(0).length).toBe(0);
    expect(queue.take(1).toString()).toBe('j');
    expect(queue.length).toBe(0);
  });

  it('takes a piece spanning three chunks in their order', () => {
    const queue = new ChunkQueue();
    for (const part of ['ab', 'c', 'def']) queue.push(Buffer.from(part));
    expect(queue.take(5).toString()).toBe('abcde');
    expect(queue.take(1).toString()).toBe('f');
  });
});
