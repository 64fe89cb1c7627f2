// The order of a tick's socket writes across the server's connections (the core's write-order.ts): what a
// request changed for others goes out before the requester's own answer.
import { Socket } from 'node:net';
import { Etcd } from '@etcdkit/client';
import { type Flushable, WriteOrder } from '@etcdkit/client/h2';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { EmbeddedEtcd } from '../../../src/index.js';

const FRAME_HEADERS = 1;

/** The frame types of one socket write (its chunks are whole frames). */
function frameTypes(chunk: unknown): number[] {
  const bytes = chunk as Buffer;
  const types: number[] = [];
  for (let offset = 0; offset + 9 <= bytes.length; offset += 9 + bytes.readUIntBE(offset, 3)) {
    types.push(bytes[offset + 3]!);
  }
  return types;
}

describe('WriteOrder', () => {
  it('flushes the connections written to for others first, then the requesters, each in turn', async () => {
    const flushed: string[] = [];
    const connection = (name: string): Flushable => ({ flush: () => flushed.push(name) });
    const order = new WriteOrder();
    const [a, b, c, d] = ['a', 'b', 'c', 'd'].map(connection);
    order.schedule(a!, true);
    order.schedule(b!, false);
    order.schedule(c!, true);
    order.schedule(d!, false);
    expect(flushed).toEqual([]);
    await new Promise<void>((resolve) => process.nextTick(resolve));
    expect(flushed).toEqual(['b', 'd', 'a', 'c']);
    // A later tick starts afresh.
    order.schedule(a!, false);
    await new Promise<void>((resolve) => process.nextTick(resolve));
    expect(flushed).toEqual(['b', 'd', 'a', 'c', 'a']);
  });
});

describe("the embedded server's writes across connections", () => {
  const cleanups: (() => Promise<unknown>)[] = [];
  afterEach(async () => {
    vi.restoreAllMocks();
    for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
  });

  it("writes a put's event to another client's watch before the writer's own watch and answer", async () => {
    const server = await EmbeddedEtcd.start();
    cleanups.push(() => server.stop());
    const port = Number(new URL(server.endpoints[0]!).port);
    const writer = new Etcd({ endpoints: [...server.endpoints] });
    const other = new Etcd({ endpoints: [...server.endpoints] });
    cleanups.push(
      () => writer.close(),
      () => other.close(),
    );
    // The writer's watch is the older one: the store notifies it first.
    const own = writer.watch({ key: 'k' });
    await own.ready();
    const theirs = other.watch({ key: 'k' });
    await theirs.ready();
    await other.get('warm');

    const writes: { client: number; types: number[] }[] = [];
    const write = Socket.prototype.write;
    vi.spyOn(Socket.prototype, 'write').mockImplementation(function (
      this: Socket,
      ...args: unknown[]
    ) {
      if (this.localPort === port) {
        writes.push({ client: this.remotePort ?? 0, types: frameTypes(args[0]) });
      }
      return (write as (...a: unknown[]) => boolean).apply(this, args);
    });
    const seen = Promise.all(
      [own, theirs].map(
        (watcher) =>
          new Promise<bigint>((resolve) => watcher.on('batch', (batch) => resolve(batch.revision))),
      ),
    );
    const { header } = await writer.put('k', 'v');
    expect(await seen).toEqual([header.revision, header.revision]);
    vi.restoreAllMocks();

    // One write each: first the other client's (its event alone), then the writer's (its own
    // event and the put's answer, whose headers are the only HEADERS frames of the two).
    expect(writes).toHaveLength(2);
    const [first, second] = writes as [(typeof writes)[0], (typeof writes)[0]];
    expect(first.client).not.toBe(second.client);
    expect(first.types.includes(FRAME_HEADERS)).toBe(false);
    expect(second.types.includes(FRAME_HEADERS)).toBe(true);
  });
});
