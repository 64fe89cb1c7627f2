// The server's own HTTP/2 layer reached by etcdkit's own client transport ('h2'), with methods
// whose codecs pass bytes through.
import { H2Transport } from '@etcdkit/client';
import type { MethodDescriptor, MethodKind } from '@etcdkit/client/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import { NON_ASCII_MESSAGE, startToy } from './toy-service.js';

/** A codec that sends and returns raw bytes. */
const bytes = {
  encode: (message: Uint8Array) => ({ finish: () => message }),
  decode: (reader: Uint8Array) => Buffer.from(reader),
} as unknown as MethodDescriptor<Uint8Array, Buffer>['request'];

function method<K extends MethodKind>(
  name: string,
  kind: K,
): MethodDescriptor<Uint8Array, Buffer, K> {
  return {
    service: 'toy.Echo',
    name,
    path: `/toy.Echo/${name}`,
    kind,
    request: bytes,
    response: bytes,
  } as unknown as MethodDescriptor<Uint8Array, Buffer, K>;
}

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup() {
  const toy = await startToy();
  cleanups.push(toy.stop);
  const channel = new H2Transport().open({ target: toy.target });
  cleanups.push(() => channel.close());
  return { toy, channel };
}

describe("H2GrpcServer reached by etcdkit's h2 transport", () => {
  it('echoes unary calls, a large one too', async () => {
    const { channel } = await setup();
    const echo = await channel.unary(method('Unary', 'unary'), Buffer.from('hello'), {});
    expect(echo.toString()).toBe('hello');
    const big = Buffer.alloc(512 * 1024, 3);
    expect((await channel.unary(method('Unary', 'unary'), big, {})).equals(big)).toBe(true);
  });

  it('reports a status with a non-ASCII message', async () => {
    const { channel } = await setup();
    await expect(
      channel.unary(method('Fail', 'unary'), Buffer.from(NON_ASCII_MESSAGE), {}),
    ).rejects.toMatchObject({ code: 9, details: NON_ASCII_MESSAGE });
  });

  it('receives a server stream in order', async () => {
    const { channel } = await setup();
    const stream = channel.serverStream(method('Count', 'server-stream'), Buffer.from('10'), {});
    const messages: string[] = [];
    for await (const message of stream) messages.push(String(message));
    expect(messages).toEqual(Array.from({ length: 10 }, (_, i) => `message ${i}`));
  });
});
