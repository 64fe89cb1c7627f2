import * as http2 from 'node:http2';
import type { AddressInfo } from 'node:net';
import { PassThrough } from 'node:stream';
import {
  abortRegistrations,
  type EtcdProcess,
  freePort,
  makeTestCertificates,
  startBlackHole,
  startEtcd,
  type TestCertificates,
} from '@etcdkit/testkit';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { Connection } from '../../src/connection/connection.js';
import { InvalidConfigError } from '../../src/errors.js';
import {
  etcdserverpb_KV,
  etcdserverpb_Maintenance,
  etcdserverpb_Watch,
} from '../../src/generated/methods.js';
import { GrpcJsTransport } from '../../src/transport/grpc-js.js';
import { H2Transport } from '../../src/transport/h2.js';
import { Http2Transport } from '../../src/transport/http2.js';
import { selectTransport } from '../../src/transport/select.js';
import { readableToAsyncIterator } from '../../src/transport/stream-reader.js';
import { GrpcStatus, type Transport, TransportError } from '../../src/transport/types.js';

const bytes = (s: string) => new TextEncoder().encode(s);
/** Every transport runs the same contract tests. */
const TRANSPORTS: ReadonlyArray<readonly [string, Transport]> = [
  ['grpc-js', new GrpcJsTransport()],
  ['http2', new Http2Transport()],
  ['h2', new H2Transport()],
];
const target = (endpoint: string) => new URL(endpoint).host;

async function rejection(promise: Promise<unknown>): Promise<TransportError> {
  const error = await promise.then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(TransportError);
  return error as TransportError;
}

describe.each(TRANSPORTS)('transport %s', (name, transport) => {
  let etcd: EtcdProcess;

  beforeAll(async () => {
    etcd = await startEtcd();
  });
  afterAll(async () => {
    await etcd?.stop();
  });

  it('is named and opens lazily', () => {
    expect(transport.name).toBe(name);
    const channel = transport.open({ target: target(etcd.endpoint) });
    expect(channel.state()).toBe('idle');
    channel.close();
    expect(channel.state()).toBe('closed');
  });

  it('connects with ready() and round-trips a unary call', async () => {
    const channel = transport.open({ target: target(etcd.endpoint) });
    try {
      await channel.ready(Date.now() + 5_000);
      expect(channel.state()).toBe('ready');
      await channel.unary(etcdserverpb_KV.Put, { key: bytes('t'), value: bytes('1') }, {});
      const res = await channel.unary(etcdserverpb_KV.Range, { key: bytes('t') }, {});
      expect(res.kvs[0]?.version).toBe(1n);
    } finally {
      channel.close();
    }
  });

  it('puts and reads back a value larger than the HTTP/2 windows (1.4 MiB)', async () => {
    const channel = transport.open({ target: target(etcd.endpoint) });
    try {
      const value = Buffer.alloc(1_400_000, 'v');
      value.write('end', value.length - 3);
      await channel.unary(etcdserverpb_KV.Put, { key: bytes('big'), value }, {});
      const res = await channel.unary(etcdserverpb_KV.Range, { key: bytes('big') }, {});
      expect(Buffer.from(res.kvs[0]?.value ?? []).equals(value)).toBe(true);
    } finally {
      channel.close();
    }
  });

  it('marks failures before any connection as unsent', async () => {
    const channel = transport.open({ target: `127.0.0.1:${await freePort()}` });
    try {
      const ready = await rejection(channel.ready(Date.now() + 5_000));
      expect(ready.code).toBe(GrpcStatus.Unavailable);
      expect(ready.sent).toBe(false);
      expect(ready.details).toMatch(/ECONNREFUSED/);
      // A call started while the channel is failed finds no connection: provably unsent too.
      const call = await rejection(
        channel.unary(etcdserverpb_KV.Put, { key: bytes('t'), value: bytes('1') }, {}),
      );
      expect(call.code).toBe(GrpcStatus.Unavailable);
      expect(call.sent).toBe(false);
    } finally {
      channel.close();
    }
  });

  it('gives ready() a real deadline against a server that never answers', async () => {
    const hole = await startBlackHole();
    const channel = transport.open({ target: target(hole.endpoint) });
    try {
      const started = Date.now();
      const error = await rejection(channel.ready(Date.now() + 300));
      // The hole never answers: without the deadline ready() would never settle. 10 s is far from
      // both, so machine load cannot flip the verdict.
      expect(Date.now() - started).toBeLessThan(10_000);
      expect(error.code).toBe(GrpcStatus.Unavailable);
      expect(error.sent).toBe(false);
    } finally {
      channel.close();
      await hole.close();
    }
  });

  it('marks failures after the call reached a ready channel as sent', async () => {
    const channel = transport.open({ target: target(etcd.endpoint) });
    try {
      await channel.ready(Date.now() + 5_000);
      await etcd.pause();
      const error = await rejection(
        channel.unary(
          etcdserverpb_KV.Put,
          { key: bytes('t'), value: bytes('2') },
          { deadline: Date.now() + 200 },
        ),
      );
      expect(error.code).toBe(GrpcStatus.DeadlineExceeded);
      expect(error.sent).toBe(true);
    } finally {
      etcd.resume();
      channel.close();
    }
  });

  it('fails each call at its own deadline, earliest first, whatever order they started in', async () => {
    const channel = transport.open({ target: target(etcd.endpoint) });
    try {
      await channel.ready(Date.now() + 5_000);
      await etcd.pause();
      const ended: string[] = [];
      const call = (name: string, ms: number) =>
        channel
          .unary(etcdserverpb_KV.Range, { key: bytes('t') }, { deadline: Date.now() + ms })
          .then(
            () => ended.push(`${name} ok`),
            (e: TransportError) => ended.push(`${name} ${GrpcStatus[e.code]}`),
          );
      const long = call('long', 60_000);
      const late = call('late', 400);
      // Earlier than every deadline before it: the channel's timer must be armed sooner.
      const early = call('early', 150);
      await Promise.all([late, early]);
      expect(ended).toEqual(['early DeadlineExceeded', 'late DeadlineExceeded']);
      etcd.resume();
      await long;
      expect(ended).toEqual(['early DeadlineExceeded', 'late DeadlineExceeded', 'long ok']);
      // The channel keeps failing later calls at their deadlines after its calls all ended.
      await etcd.pause();
      await call('again', 100);
      expect(ended.at(-1)).toBe('again DeadlineExceeded');
    } finally {
      etcd.resume();
      channel.close();
    }
  });

  it('cancels a call on abort: Cancelled, cause = the reason', async () => {
    const channel = transport.open({ target: target(etcd.endpoint) });
    try {
      await channel.ready(Date.now() + 5_000);
      const controller = new AbortController();
      const reason = new Error('no longer needed');
      await etcd.pause();
      const pending = channel.unary(
        etcdserverpb_KV.Range,
        { key: bytes('t') },
        { signal: controller.signal },
      );
      controller.abort(reason);
      const error = await rejection(pending);
      expect(error.code).toBe(GrpcStatus.Cancelled);
      expect(error.cause).toBe(reason);
      const before = await rejection(
        channel.unary(etcdserverpb_KV.Range, { key: bytes('t') }, { signal: controller.signal }),
      );
      expect(before.sent).toBe(false);
      expect(before.cause).toBe(reason);
    } finally {
      etcd.resume();
      channel.close();
    }
  });

  it('cancels every call sharing a signal, and leaves nothing on a signal once its calls end', async () => {
    const channel = transport.open({ target: target(etcd.endpoint) });
    const range = (signal: AbortSignal) =>
      channel.unary(etcdserverpb_KV.Range, { key: bytes('t') }, { signal });
    try {
      await channel.ready(Date.now() + 5_000);
      const kept = new AbortController();
      await range(kept.signal);
      await Promise.all(Array.from({ length: 5 }, () => range(kept.signal)));
      expect(abortRegistrations(kept.signal)).toBe(0);
      const controller = new AbortController();
      const reason = new Error('no longer needed');
      await etcd.pause();
      const pending = Array.from({ length: 5 }, () => rejection(range(controller.signal)));
      controller.abort(reason);
      for (const error of await Promise.all(pending)) {
        expect(error.code).toBe(GrpcStatus.Cancelled);
        expect(error.cause).toBe(reason);
      }
      expect(abortRegistrations(controller.signal)).toBe(0);
    } finally {
      etcd.resume();
      channel.close();
    }
  });

  it("stops a call on its closing signal beside the caller's: one listener kept on the closing signal, the caller's gone with its call", async () => {
    const channel = transport.open({ target: target(etcd.endpoint) });
    expect(channel.takesClosingSignal).toBe(true);
    const closing = new AbortController();
    const range = (signal: AbortSignal) =>
      channel.unary(
        etcdserverpb_KV.Range,
        { key: bytes('t') },
        { signal, closingSignal: closing.signal },
      );
    try {
      const caller = new AbortController();
      await range(caller.signal);
      await Promise.all(Array.from({ length: 5 }, () => range(caller.signal)));
      expect(abortRegistrations(caller.signal)).toBe(0);
      expect(abortRegistrations(closing.signal)).toBe(1);
      await etcd.pause();
      const aborted = new AbortController();
      const reason = new Error('no longer needed');
      const byCaller = rejection(range(aborted.signal));
      const byClosing = rejection(range(caller.signal));
      expect(abortRegistrations(aborted.signal)).toBe(1);
      expect(abortRegistrations(closing.signal)).toBe(1);
      aborted.abort(reason);
      const first = await byCaller;
      expect([first.code, first.cause, first.sent]).toEqual([GrpcStatus.Cancelled, reason, true]);
      closing.abort(new Error('closing'));
      const second = await byClosing;
      expect([second.code, second.cause]).toEqual([GrpcStatus.Cancelled, closing.signal.reason]);
      expect(abortRegistrations(caller.signal)).toBe(0);
      const after = await rejection(range(caller.signal));
      expect([after.code, after.sent]).toEqual([GrpcStatus.Cancelled, false]);
    } finally {
      etcd.resume();
      channel.close();
    }
  });

  it('maps server errors with their status and details', async () => {
    const channel = transport.open({ target: target(etcd.endpoint) });
    try {
      const error = await rejection(
        channel.unary(etcdserverpb_KV.Put, { key: new Uint8Array(), value: bytes('x') }, {}),
      );
      expect(error.code).toBe(GrpcStatus.InvalidArgument);
      expect(error.details).toBe('etcdserver: key is not provided');
      expect(error.sent).toBe(true);
    } finally {
      channel.close();
    }
  });

  it('enforces the send size limit', async () => {
    const channel = transport.open({ target: target(etcd.endpoint), maxSendMessageBytes: 1024 });
    try {
      const error = await rejection(
        channel.unary(etcdserverpb_KV.Put, { key: bytes('big'), value: new Uint8Array(4096) }, {}),
      );
      expect(error.code).toBe(GrpcStatus.ResourceExhausted);
    } finally {
      channel.close();
    }
  });

  it('enforces the receive size limit: ResourceExhausted, sent', async () => {
    const channel = transport.open({
      target: target(etcd.endpoint),
      maxReceiveMessageBytes: 1024,
    });
    try {
      await channel.unary(
        etcdserverpb_KV.Put,
        { key: bytes('big'), value: new Uint8Array(4096) },
        {},
      );
      const error = await rejection(
        channel.unary(etcdserverpb_KV.Range, { key: bytes('big') }, {}),
      );
      expect(error.code).toBe(GrpcStatus.ResourceExhausted);
      expect(error.sent).toBe(true);
      // The channel stays usable.
      const small = await channel.unary(etcdserverpb_KV.Range, { key: bytes('t') }, {});
      expect(Buffer.from(small.kvs[0]?.key ?? []).toString()).toBe('t');
    } finally {
      channel.close();
    }
  });

  it('pings while a stream is open and fails it with Unavailable when pings go unanswered', async () => {
    const channel = transport.open({
      target: target(etcd.endpoint),
      keepaliveIntervalMs: 200,
      keepaliveTimeoutMs: 200,
    });
    try {
      const watch = channel.bidiStream(etcdserverpb_Watch.Watch, {});
      watch.write({ createRequest: { key: bytes('keepalive') } });
      const it = watch[Symbol.asyncIterator]();
      expect((await it.next()).value?.created).toBe(true);
      await etcd.pause();
      const error = await it.next().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(TransportError);
      expect((error as TransportError).code).toBe(GrpcStatus.Unavailable);
      expect((error as TransportError).sent).toBe(true);
    } finally {
      etcd.resume();
      channel.close();
    }
  });

  it('streams: server stream iterates, bidi writes after end() throw, cancel() ends with Cancelled', async () => {
    const channel = transport.open({ target: target(etcd.endpoint) });
    try {
      let chunks = 0;
      for await (const part of channel.serverStream(etcdserverpb_Maintenance.Snapshot, {}, {})) {
        expect(part.blob).toBeInstanceOf(Uint8Array);
        chunks++;
      }
      expect(chunks).toBeGreaterThan(0);

      const watch = channel.bidiStream(etcdserverpb_Watch.Watch, {});
      watch.write({ createRequest: { key: bytes('t') } });
      const it = watch[Symbol.asyncIterator]();
      expect((await it.next()).value?.created).toBe(true);
      watch.end();
      expect(() => watch.write({ createRequest: { key: bytes('u') } })).toThrow(TransportError);
      watch.cancel();
      const error = await it.next().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(TransportError);
      expect((error as TransportError).code).toBe(GrpcStatus.Cancelled);
    } finally {
      channel.close();
    }
  });

  it('ends a stream with the TransportError when the server fails it', async () => {
    const channel = transport.open({ target: target(etcd.endpoint) });
    try {
      const error = await (async () => {
        for await (const _ of channel.serverStream(etcdserverpb_KV.RangeStream, {}, {})) {
          // etcd 3.4 has no RangeStream
        }
      })().then(
        () => undefined,
        (e: unknown) => e,
      );
      expect(error).toBeInstanceOf(TransportError);
      expect((error as TransportError).code).toBe(GrpcStatus.Unimplemented);
    } finally {
      channel.close();
    }
  });
});

/** A gRPC server written against node:http2 directly, to script answers real servers rarely give. */
interface ScriptedServer {
  readonly target: string;
  /** Request headers of every stream, in order. */
  readonly requests: http2.IncomingHttpHeaders[];
  /** Resolves with how many messages the server had written when a write first had to wait. */
  readonly heldBack: Promise<number>;
  /** HTTP/2 connections accepted since the start. */
  readonly accepted: number;
  /** Destroys every open session (a dropped connection). */
  drop(): void;
  close(): Promise<void>;
}

const framed = (message: Uint8Array) => {
  const frame = Buffer.alloc(5 + message.byteLength);
  frame.writeUInt32BE(message.byteLength, 1);
  frame.set(message, 5);
  return frame;
};
const rangeAnswer = (count: number) =>
  framed(etcdserverpb_KV.Range.response.encode({ count, kvs: [] } as never).finish());
const STREAMED = 1_000;

async function startScriptedServer(): Promise<ScriptedServer> {
  const requests: http2.IncomingHttpHeaders[] = [];
  const sessions = new Set<http2.ServerHttp2Session>();
  let reportHeldBack: (sent: number) => void = () => {};
  const heldBack = new Promise<number>((resolve) => {
    reportHeldBack = resolve;
  });
  let accepted = 0;
  const server = http2.createServer();
  server.on('session', (session) => {
    accepted++;
    sessions.add(session);
    session.on('close', () => sessions.delete(session));
    session.on('error', () => {});
  });
  server.on('stream', (stream, headers) => {
    requests.push(headers);
    stream.on('error', () => {});
    const grpc = { ':status': 200, 'content-type': 'application/grpc' };
    switch (headers['x-answer']) {
      case 'trailers-only':
        stream.respond(
          {
            ...grpc,
            'grpc-status': '5',
            'grpc-message': 'not%20here%20%E2%9C%93',
            'x-why': 'because',
          },
          { endStream: true },
        );
        return;
      case 'status-while-reading':
        // As gRPC servers do: the request side stays open (and read) after the status is sent.
        stream.on('data', () => {});
        stream.respond(grpc, { waitForTrailers: true });
        stream.on('wantTrailers', () =>
          stream.sendTrailers({ 'grpc-status': '5', 'grpc-message': 'not%20here' }),
        );
        stream.end();
        return;
      case 'http-503':
        stream.respond({ ':status': 503 }, { endStream: true });
        return;
      case 'refused':
        stream.close(http2.constants.NGHTTP2_REFUSED_STREAM);
        return;
      case 'no-message':
        stream.respond(grpc, { waitForTrailers: true });
        stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
        stream.end();
        return;
      case 'two-messages':
        stream.respond(grpc, { waitForTrailers: true });
        stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
        stream.write(rangeAnswer(1));
        stream.end(rangeAnswer(2));
        return;
      case 'error-after-message':
        stream.respond(grpc, { waitForTrailers: true });
        stream.on('wantTrailers', () =>
          stream.sendTrailers({
            'grpc-status': '9',
            'grpc-message': 'too%20late',
            'x-why': 'late',
          }),
        );
        stream.end(rangeAnswer(1));
        return;
      case 'many': {
        stream.respond(grpc, { waitForTrailers: true });
        stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
        let i = 0;
        let reported = false;
        const pump = () => {
          while (i < STREAMED) {
            const part = etcdserverpb_Maintenance.Snapshot.response
              .encode({ blob: new Uint8Array(1024), remainingBytes: BigInt(i) } as never)
              .finish();
            i++;
            if (!stream.write(framed(part))) {
              if (!reported) {
                reported = true;
                reportHeldBack(i);
              }
              stream.once('drain', pump);
              return;
            }
          }
          stream.end();
        };
        pump();
        return;
      }
      default:
        stream.respond(grpc, { waitForTrailers: true });
        stream.on('wantTrailers', () => stream.sendTrailers({ 'grpc-status': '0' }));
        stream.end(rangeAnswer(7));
    }
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as AddressInfo;
  return {
    target: `127.0.0.1:${port}`,
    requests,
    heldBack,
    get accepted() {
      return accepted;
    },
    drop() {
      for (const session of sessions) session.destroy();
    },
    close: () =>
      new Promise<void>((resolve) => {
        for (const session of sessions) session.destroy();
        server.close(() => resolve());
      }),
  };
}

describe.each(TRANSPORTS)('transport %s against a scripted gRPC server', (_name, transport) => {
  let server: ScriptedServer;
  const answer = (kind: string) => ({ metadata: { 'x-answer': kind } });

  beforeAll(async () => {
    server = await startScriptedServer();
  });
  afterAll(async () => {
    await server?.close();
  });

  it('sends the gRPC headers, the deadline and the metadata', async () => {
    const channel = transport.open({ target: server.target });
    try {
      const res = await channel.unary(
        etcdserverpb_KV.Range,
        { key: bytes('k') },
        { metadata: { token: 'secret', hasleader: 'true' }, deadline: Date.now() + 60_000 },
      );
      expect(res.count).toBe(7n);
      const seen = server.requests.at(-1)!;
      expect(seen[':method']).toBe('POST');
      expect(seen[':path']).toBe('/etcdserverpb.KV/Range');
      expect(seen['content-type']).toMatch(/^application\/grpc/);
      expect(seen.te).toBe('trailers');
      expect(seen.token).toBe('secret');
      expect(seen.hasleader).toBe('true');
      expect(seen['grpc-timeout']).toMatch(/^\d{1,8}[HMSmun]$/);
    } finally {
      channel.close();
    }
  });

  it('reads the status of a trailers-only answer, percent-decoded, with its metadata', async () => {
    const channel = transport.open({ target: server.target });
    try {
      const error = await rejection(
        channel.unary(etcdserverpb_KV.Range, {}, answer('trailers-only')),
      );
      expect(error.code).toBe(GrpcStatus.NotFound);
      expect(error.details).toBe('not here ✓');
      expect(error.metadata['x-why']).toBe('because');
      expect(error.sent).toBe(true);
    } finally {
      channel.close();
    }
  });

  it('ends a bidi stream the client still writes to as soon as the server sends its status', async () => {
    const channel = transport.open({ target: server.target });
    try {
      // The client never half-closes: the server's status alone must end the stream.
      const watch = channel.bidiStream(etcdserverpb_Watch.Watch, answer('status-while-reading'));
      const error = await rejection(watch[Symbol.asyncIterator]().next());
      expect(error.code).toBe(GrpcStatus.NotFound);
      expect(error.details).toBe('not here');
      expect(error.sent).toBe(true);
      expect(() => watch.write({})).toThrow(TransportError);
    } finally {
      channel.close();
    }
  });

  it('maps an HTTP error without gRPC status as gRPC does', async () => {
    const channel = transport.open({ target: server.target });
    try {
      const error = await rejection(channel.unary(etcdserverpb_KV.Range, {}, answer('http-503')));
      expect(error.code).toBe(GrpcStatus.Unavailable);
      expect(error.details).toBe('Received HTTP status code 503');
    } finally {
      channel.close();
    }
  });

  it('maps a refused stream to Unavailable', async () => {
    const channel = transport.open({ target: server.target });
    try {
      const error = await rejection(channel.unary(etcdserverpb_KV.Range, {}, answer('refused')));
      expect(error.code).toBe(GrpcStatus.Unavailable);
    } finally {
      channel.close();
    }
  });

  it('fails a unary call answered with no message (Unimplemented)', async () => {
    const channel = transport.open({ target: server.target });
    try {
      const none = await rejection(channel.unary(etcdserverpb_KV.Range, {}, answer('no-message')));
      expect(none.code).toBe(GrpcStatus.Unimplemented);
      expect(none.details).toBe('No message received');
      expect((await channel.unary(etcdserverpb_KV.Range, {}, {})).count).toBe(7n);
    } finally {
      channel.close();
    }
  });

  // The grpc-js transport never settles such a call (a known gap, not yet fixed): http2 only.
  it.skipIf(_name === 'grpc-js')(
    'fails a unary call answered with two messages (Unimplemented)',
    async () => {
      const channel = transport.open({ target: server.target });
      try {
        const two = await rejection(
          channel.unary(etcdserverpb_KV.Range, {}, answer('two-messages')),
        );
        expect(two.code).toBe(GrpcStatus.Unimplemented);
        expect(two.details).toBe('Too many responses received');
        expect((await channel.unary(etcdserverpb_KV.Range, {}, {})).count).toBe(7n);
      } finally {
        channel.close();
      }
    },
  );

  it('reports the trailers status of a unary call that also sent a message', async () => {
    const channel = transport.open({ target: server.target });
    try {
      const error = await rejection(
        channel.unary(etcdserverpb_KV.Range, {}, answer('error-after-message')),
      );
      expect(error.code).toBe(GrpcStatus.FailedPrecondition);
      expect(error.details).toBe('too late');
      expect(error.metadata['x-why']).toBe('late');
    } finally {
      channel.close();
    }
  });

  it('holds a fast server back while the consumer lags, then delivers everything in order', async () => {
    const channel = transport.open({ target: server.target });
    try {
      const stream = channel.serverStream(etcdserverpb_Maintenance.Snapshot, {}, answer('many'));
      const it = stream[Symbol.asyncIterator]();
      expect((await it.next()).value?.remainingBytes).toBe(0n);
      // The consumer takes nothing more until the server's writes have had to wait.
      expect(await server.heldBack).toBeLessThan(STREAMED);
      let expected = 1n;
      for (;;) {
        const next = await it.next();
        if (next.done) break;
        expect(next.value.remainingBytes).toBe(expected);
        expected++;
      }
      expect(expected).toBe(BigInt(STREAMED));
    } finally {
      channel.close();
    }
  });

  it('reconnects after the connection drops', async () => {
    const channel = transport.open({ target: server.target });
    try {
      await channel.ready(Date.now() + 5_000);
      server.drop();
      // vi.waitFor gives up after 1 s by default: too short for a socket close seen on a loaded run.
      await vi.waitFor(() => expect(channel.state()).not.toBe('ready'), { timeout: 10_000 });
      await channel.ready(Date.now() + 5_000);
      const res = await channel.unary(etcdserverpb_KV.Range, {}, {});
      expect(res.count).toBe(7n);
    } finally {
      channel.close();
    }
  });

  it('after the connection drops it is idle, and dials again only when a call or ready() asks', async () => {
    const channel = transport.open({ target: server.target });
    try {
      await channel.ready(Date.now() + 5_000);
      const accepted = server.accepted;
      server.drop();
      await vi.waitFor(() => expect(channel.state()).toBe('idle'), { timeout: 5_000 });
      // A background redial would dial at once; nothing does until asked.
      await new Promise((resolve) => setTimeout(resolve, 300));
      expect(channel.state()).toBe('idle');
      expect(server.accepted).toBe(accepted);

      const res = await channel.unary(etcdserverpb_KV.Range, {}, {});
      expect(res.count).toBe(7n);
      expect(channel.state()).toBe('ready');
      expect(server.accepted).toBe(accepted + 1);
    } finally {
      channel.close();
    }
  });
});

describe.each(TRANSPORTS)('transport %s over TLS', (_name, transport) => {
  let certs: TestCertificates;
  let etcd: EtcdProcess;

  beforeAll(async () => {
    certs = await makeTestCertificates();
    etcd = await startEtcd({ tls: certs.etcdTls({ clientCertAuth: true }) });
  });
  afterAll(async () => {
    await etcd?.stop();
    await certs?.remove();
  });

  it('does mutual TLS with a CA, a client certificate and key, by IP or by serverName', async () => {
    for (const tls of [certs.clientTls, { ...certs.clientTls, serverName: 'localhost' }]) {
      const channel = transport.open({ target: target(etcd.endpoint), tls });
      try {
        await channel.unary(etcdserverpb_KV.Put, { key: bytes('tls'), value: bytes('1') }, {});
        const res = await channel.unary(etcdserverpb_KV.Range, { key: bytes('tls') }, {});
        expect(Buffer.from(res.kvs[0]?.value ?? []).toString()).toBe('1');
      } finally {
        channel.close();
      }
    }
  });

  it('fails to connect, unsent, without a client certificate or with a wrong serverName', async () => {
    for (const tls of [{ ca: certs.ca.cert }, { ...certs.clientTls, serverName: 'elsewhere' }]) {
      const channel = transport.open({ target: target(etcd.endpoint), tls });
      try {
        const error = await rejection(channel.ready(Date.now() + 10_000));
        expect(error.code).toBe(GrpcStatus.Unavailable);
        expect(error.sent).toBe(false);
      } finally {
        channel.close();
      }
    }
  });
});

describe('the transport option', () => {
  it('picks a transport by name, takes an instance, and refuses anything else', () => {
    // The default, unless ETCDKIT_TEST_TRANSPORT switched it for this run.
    expect(selectTransport(undefined).name).toBe(process.env.ETCDKIT_TEST_TRANSPORT || 'h2');
    expect(selectTransport('grpc-js')).toBeInstanceOf(GrpcJsTransport);
    expect(selectTransport('http2')).toBeInstanceOf(Http2Transport);
    expect(selectTransport('h2')).toBeInstanceOf(H2Transport);
    const own = new Http2Transport();
    expect(selectTransport(own)).toBe(own);
    expect(
      () => new Connection({ endpoints: ['http://127.0.0.1:2379'], transport: 'h3' as never }),
    ).toThrow(InvalidConfigError);
  });
});

describe('readableToAsyncIterator', () => {
  it('pauses the source while the consumer lags, and resumes it', async () => {
    const source = new PassThrough({ objectMode: true, highWaterMark: 1_000 });
    const it = readableToAsyncIterator<number>(
      source,
      (e) => e as Error,
      () => {},
      4,
    );
    for (let i = 0; i < 10; i++) source.write(i);
    await new Promise((r) => setImmediate(r));
    expect(source.isPaused()).toBe(true);
    const seen: number[] = [];
    for (let i = 0; i < 8; i++) seen.push((await it.next()).value as number);
    source.end();
    for (;;) {
      const r = await it.next();
      if (r.done) break;
      seen.push(r.value);
    }
    expect(seen).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });

  it('delivers buffered messages before the error, then throws it once', async () => {
    const source = new PassThrough({ objectMode: true });
    let done = 0;
    const it = readableToAsyncIterator<string>(
      source,
      (e) => new Error(`mapped: ${(e as Error).message}`),
      () => done++,
    );
    source.write('a');
    source.write('b');
    source.push(null);
    source.emit('error', new Error('boom'));
    expect((await it.next()).value).toBe('a');
    expect((await it.next()).value).toBe('b');
    await expect(it.next()).rejects.toThrow('mapped: boom');
    expect((await it.next()).done).toBe(true);
    expect(done).toBe(1);
  });

  it('runs onDone once on early return', async () => {
    const source = new PassThrough({ objectMode: true });
    let done = 0;
    const it = readableToAsyncIterator<string>(
      source,
      (e) => e as Error,
      () => done++,
    );
    source.write('a');
    await it.next();
    await it.return?.();
    await it.return?.();
    expect(done).toBe(1);
  });
});
