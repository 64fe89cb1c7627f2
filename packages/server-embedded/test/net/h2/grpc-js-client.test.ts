// The server's own HTTP/2 layer reached by @grpc/grpc-js's client with raw serializers: what a
// grpc-js client sees (statuses, messages, streams, cancellation, deadlines) is what it would see
// of grpc-js's server.
import { createServer, type Socket } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { NON_ASCII_MESSAGE, startToy, until } from './toy-service.js';

const raw = (bytes: Buffer): Buffer => bytes;
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup() {
  const toy = await startToy();
  cleanups.push(toy.stop);
  const client = new grpc.Client(toy.target, grpc.credentials.createInsecure());
  cleanups.push(() => client.close());
  return { toy, client };
}

function unary(
  client: grpc.Client,
  path: string,
  request: Buffer,
  options: grpc.CallOptions = {},
  metadata = new grpc.Metadata(),
): Promise<{ error: grpc.ServiceError | null; response: Buffer | undefined }> {
  return new Promise((resolve) => {
    client.makeUnaryRequest(path, raw, raw, request, metadata, options, (error, response) =>
      resolve({ error, response }),
    );
  });
}

describe('H2GrpcServer reached by grpc-js', () => {
  it('echoes a unary call and passes metadata', async () => {
    const { client } = await setup();
    const echo = await unary(client, '/toy.Echo/Unary', Buffer.from('hello'));
    expect(echo.error).toBeNull();
    expect(echo.response?.toString()).toBe('hello');
    const metadata = new grpc.Metadata();
    metadata.set('token', 'secret');
    const who = await unary(client, '/toy.Echo/Whoami', Buffer.alloc(0), {}, metadata);
    expect(who.response?.toString()).toBe('secret');
  });

  it("reports an unknown method as UNIMPLEMENTED with grpc-js's text", async () => {
    const { client } = await setup();
    const { error } = await unary(client, '/toy.Echo/Nope', Buffer.from('x'));
    expect(error?.code).toBe(grpc.status.UNIMPLEMENTED);
    expect(error?.details).toBe('The server does not implement the method /toy.Echo/Nope');
  });

  it('decodes a non-ASCII status message back exactly', async () => {
    const { client } = await setup();
    const { error } = await unary(client, '/toy.Echo/Fail', Buffer.from(NON_ASCII_MESSAGE));
    expect(error?.code).toBe(grpc.status.FAILED_PRECONDITION);
    expect(error?.details).toBe(NON_ASCII_MESSAGE);
  });

  it('echoes a 1 MiB message', async () => {
    const { client } = await setup();
    const big = Buffer.alloc(1024 * 1024, 7);
    const { error, response } = await unary(client, '/toy.Echo/Unary', big);
    expect(error).toBeNull();
    expect(response?.equals(big)).toBe(true);
  });

  it('receives a server stream in order', async () => {
    const { client } = await setup();
    const stream = client.makeServerStreamRequest('/toy.Echo/Count', raw, raw, Buffer.from('20'));
    const messages: string[] = [];
    for await (const message of stream) messages.push(String(message));
    expect(messages).toEqual(Array.from({ length: 20 }, (_, i) => `message ${i}`));
  });

  it('runs a bidi call to its half-close', async () => {
    const { client } = await setup();
    const call = client.makeBidiStreamRequest('/toy.Echo/Chat', raw, raw);
    const received: string[] = [];
    const status = new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
    call.on('data', (message: Buffer) => received.push(String(message)));
    call.write(Buffer.from('one'));
    call.write(Buffer.from('two'));
    call.end();
    expect((await status).code).toBe(grpc.status.OK);
    expect(received).toEqual(['echo:one', 'echo:two', 'bye after 2']);
  });

  it("aborts the handler's signal when the client cancels", async () => {
    const { client, toy } = await setup();
    const call = client.makeUnaryRequest('/toy.Echo/Hold', raw, raw, Buffer.from('x'), () => {});
    await until(() => toy.seen.held.length === 1);
    call.cancel();
    await until(() => toy.seen.aborts.length === 1);
  });

  it('fails a call past its deadline with DEADLINE_EXCEEDED', async () => {
    const { client, toy } = await setup();
    const { error } = await unary(client, '/toy.Echo/Hold', Buffer.from('x'), {
      deadline: Date.now() + 150,
    });
    expect(error?.code).toBe(grpc.status.DEADLINE_EXCEEDED);
    await until(() => toy.seen.aborts.length === 1);
  });

  it('stops a client writing to a paused call by flow control, and delivers all on resume', async () => {
    const toy = await startToy();
    cleanups.push(toy.stop);
    // Served through `handle` to see how much the server's socket read.
    const sockets: Socket[] = [];
    const listener = createServer((socket) => {
      sockets.push(socket);
      toy.server.handle(socket);
    });
    await new Promise<void>((resolve) => listener.listen(0, '127.0.0.1', resolve));
    cleanups.push(() => new Promise((resolve) => listener.close(resolve)));
    const { port } = listener.address() as { port: number };
    const client = new grpc.Client(`127.0.0.1:${port}`, grpc.credentials.createInsecure());
    cleanups.push(() => client.close());
    const call = client.makeBidiStreamRequest('/toy.Echo/Paused', raw, raw);
    const received: string[] = [];
    const status = new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
    call.on('data', (message: Buffer) => received.push(String(message)));
    // 300 messages of 1,000 octets: 301,500 octets of DATA against a 65,535-octet window.
    const sent = Array.from({ length: 300 }, (_, i) => Buffer.alloc(1000, String(i)));
    for (const message of sent) call.write(message);
    call.end();
    await until(() => toy.seen.paused.length === 1 && sockets[0]!.bytesRead > 65_535);
    await new Promise((resolve) => setTimeout(resolve, 200));
    // The stream window and the request's headers and SETTINGS, nothing more.
    expect(sockets[0]!.bytesRead).toBeLessThan(65_535 + 1024);
    expect(toy.seen.delivered).toEqual([]);
    toy.seen.paused[0]!.resume();
    expect((await status).code).toBe(grpc.status.OK);
    expect(received).toEqual(['got 300']);
    expect(toy.seen.delivered).toEqual(sent);
    expect(sockets[0]!.bytesRead).toBeGreaterThan(301_500);
  });
});
