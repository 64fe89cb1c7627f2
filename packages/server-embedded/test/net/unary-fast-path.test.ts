// The unary fast path in front of a grpc-js server: which calls it takes, and that what a client
// reads from it (headers, message, trailers, statuses) is what grpc-js's own server sends for the
// same handler. A raw node:http2 client sends each call, so every octet of the answer is seen.
import { type ClientHttp2Session, connect, type IncomingHttpHeaders } from 'node:http2';
import { createServer, type Server } from 'node:net';
import { etcdserverpb_KV as KV, type MethodDescriptor } from '@etcdkit/client/protocol';
import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { EtcdServerError } from '../../src/errors.js';
import { CallGate } from '../../src/faults/call-gate.js';
import { GrpcJsRegistry } from '../../src/net/grpc-js-registry.js';
import { UnaryFastPath } from '../../src/net/unary-fast-path.js';
import type { CallInfo } from '../../src/services/registry.js';

const MAX_RECEIVE = 1024;

interface Answer {
  headers: IncomingHttpHeaders;
  body: Buffer;
  trailers: IncomingHttpHeaders;
}

/** A grpc-js server with Range and Put registered, through the fast path or not. */
async function startServer(options: { fastPath: boolean; idleGate?: boolean }) {
  const gate = new CallGate();
  gate.setPolicy({ admit: () => ({ delayMs: 0 }), idle: () => options.idleGate ?? true });
  const server = new grpc.Server({
    'grpc.max_receive_message_length': MAX_RECEIVE,
    interceptors: [gate.interceptor()],
  });
  const injector = server.createConnectionInjector(grpc.ServerCredentials.createInsecure());
  const fastPath = options.fastPath ? new UnaryFastPath(gate, MAX_RECEIVE) : undefined;
  const diverted = fastPath?.divert(server);
  const calls: CallInfo[] = [];
  const registry = new GrpcJsRegistry(server, fastPath);
  registry.unary(KV.Range, (request, _size, call) => {
    calls.push(call);
    const token = call.metadata.get('token')[0];
    return { count: BigInt(request.limit ?? 0), more: token === 'secret' };
  });
  registry.unary(KV.Put, async (request) => {
    if (request.key?.length === 0) throw new EtcdServerError('EMPTY_KEY');
    if (request.value?.length === 1) throw new Error('plain failure');
    await new Promise((resolve) => setTimeout(resolve, 200));
    return {};
  });
  const tcp: Server = createServer((socket) => injector.injectConnection(socket));
  await new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', resolve));
  const address = tcp.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    diverted,
    calls,
    port,
    async stop() {
      server.forceShutdown();
      await new Promise((resolve) => tcp.close(resolve));
    },
  };
}

function frame<Req>(method: MethodDescriptor<Req, unknown>, request: Req): Buffer {
  const message = method.request.encode(request as never).finish();
  const framed = Buffer.alloc(5 + message.length);
  framed.writeUInt32BE(message.length, 1);
  framed.set(message, 5);
  return framed;
}

function call(
  session: ClientHttp2Session,
  path: string,
  body: Buffer,
  extra: Record<string, string> = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const stream = session.request({
      ':method': 'POST',
      ':path': path,
      'content-type': 'application/grpc',
      te: 'trailers',
      ...extra,
    });
    let headers: IncomingHttpHeaders = {};
    let trailers: IncomingHttpHeaders = {};
    const chunks: Buffer[] = [];
    stream.on('response', (h) => {
      headers = h;
    });
    stream.on('trailers', (t) => {
      trailers = t;
    });
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('error', reject);
    stream.on('close', () => resolve({ headers, body: Buffer.concat(chunks), trailers }));
    stream.end(body);
  });
}

/** What is compared between the two servers: headers and trailers without the date. */
function shape(answer: Answer) {
  const { date: _date, ...headers } = answer.headers;
  return { headers, body: answer.body.toString('hex'), trailers: answer.trailers };
}

describe('UnaryFastPath', () => {
  const stops: (() => Promise<void>)[] = [];
  afterEach(async () => {
    for (const stop of stops.splice(0)) await stop();
  });

  async function both(
    send: (session: ClientHttp2Session) => Promise<Answer>,
  ): Promise<{ fast: Answer; grpcJs: Answer; fastCalls: CallInfo[] }> {
    const results: Answer[] = [];
    let fastCalls: CallInfo[] = [];
    for (const fastPath of [true, false]) {
      const server = await startServer({ fastPath });
      stops.push(server.stop);
      if (fastPath) fastCalls = server.calls;
      const session = connect(`http://127.0.0.1:${server.port}`);
      try {
        results.push(await send(session));
      } finally {
        session.close();
      }
    }
    return { fast: results[0]!, grpcJs: results[1]!, fastCalls };
  }

  it('finds grpc-js HTTP/2 servers and serves the unary calls it was given', async () => {
    const server = await startServer({ fastPath: true });
    stops.push(server.stop);
    expect(server.diverted).toBe(true);
    const session = connect(`http://127.0.0.1:${server.port}`);
    try {
      const answer = await call(session, KV.Range.path, frame(KV.Range, { limit: 7n }), {
        token: 'secret',
      });
      const response = KV.Range.response.decode(answer.body.subarray(5));
      expect(response.count).toBe(7n);
      expect(response.more).toBe(true);
      // Served here, not by grpc-js: the handler got the fast path's call, not grpc-js's.
      expect(server.calls).toHaveLength(1);
      expect(server.calls[0]!.metadata).not.toBeInstanceOf(grpc.Metadata);
    } finally {
      session.close();
    }
  });

  it('answers a call exactly as grpc-js does: headers, message and trailers', async () => {
    const { fast, grpcJs, fastCalls } = await both((session) =>
      call(session, KV.Range.path, frame(KV.Range, { limit: 3n }), { token: 'other' }),
    );
    expect(fastCalls).toHaveLength(1);
    expect(shape(fast)).toEqual(shape(grpcJs));
    expect(fast.trailers['grpc-status']).toBe('0');
  });

  it('answers an etcd error, a plain error and a message over the limit as grpc-js does', async () => {
    const cases: [string, Buffer][] = [
      [KV.Put.path, frame(KV.Put, { key: new Uint8Array(0) })],
      [KV.Put.path, frame(KV.Put, { key: new Uint8Array([1]), value: new Uint8Array([1]) })],
      [KV.Range.path, frame(KV.Range, { key: new Uint8Array(MAX_RECEIVE + 1) })],
      [KV.Range.path, Buffer.from([0, 0, 0])],
      [KV.Range.path, Buffer.from([0, 0, 0, 0, 2, 0xff, 0xff])],
    ];
    for (const [path, body] of cases) {
      const { fast, grpcJs } = await both((session) => call(session, path, body));
      expect(shape(fast)).toEqual(shape(grpcJs));
    }
    const { fast } = await both((session) =>
      call(session, KV.Put.path, frame(KV.Put, { key: new Uint8Array(0) })),
    );
    expect(fast.headers['grpc-status']).toBe('3');
    expect(fast.headers['grpc-message']).toBe('etcdserver:%20key%20is%20not%20provided');
  });

  it('ends a call whose grpc-timeout passes with DEADLINE_EXCEEDED, as grpc-js does', async () => {
    const body = frame(KV.Put, { key: new Uint8Array([1]) });
    const { fast, grpcJs } = await both((session) =>
      call(session, KV.Put.path, body, { 'grpc-timeout': '50m' }),
    );
    expect(shape(fast)).toEqual(shape(grpcJs));
    expect(fast.headers['grpc-status']).toBe('4');
  });

  it('leaves compressed calls, bad timeouts, other paths and a busy gate to grpc-js', async () => {
    const server = await startServer({ fastPath: true });
    stops.push(server.stop);
    const busy = await startServer({ fastPath: true, idleGate: false });
    stops.push(busy.stop);
    const session = connect(`http://127.0.0.1:${server.port}`);
    const busySession = connect(`http://127.0.0.1:${busy.port}`);
    try {
      const body = frame(KV.Range, {});
      await call(session, KV.Range.path, body, { 'grpc-encoding': 'gzip' });
      const badTimeout = await call(session, KV.Range.path, body, { 'grpc-timeout': 'soon' });
      expect(badTimeout.headers['grpc-message']).toBe(
        'Invalid%20grpc-timeout%20value%20%22soon%22',
      );
      const unknown = await call(session, KV.Compact.path, frame(KV.Compact, {}));
      expect(unknown.headers['grpc-status']).toBe('12');
      await call(busySession, KV.Range.path, body);
      // Each of these reached its handler through grpc-js, if at all.
      for (const seen of [...server.calls, ...busy.calls]) {
        expect(seen.metadata).toBeInstanceOf(grpc.Metadata);
      }
      expect(busy.calls).toHaveLength(1);
    } finally {
      session.close();
      busySession.close();
    }
  });
});
