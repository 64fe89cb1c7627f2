// End-to-end properties of the authority rewriter with real HTTP/2 encoders on the client side
// (Node's own nghttp2, which Huffman-codes and indexes as it sees fit), the client's bytes cut at
// random boundaries on their way in:
// - Node's HTTP/2 client -> rewriter -> Node's HTTP/2 server: every request's headers arrive as
//   sent, the scheme cut off :authority;
// - grpc-js with etcdctl 3.4's kind of authority -> TCP proxy -> EmbeddedEtcd: calls with random
//   metadata succeed and read back what they wrote.
import { EventEmitter } from 'node:events';
import { connect, createServer, type Http2Server, type IncomingHttpHeaders } from 'node:http2';
import {
  createConnection,
  createServer as createTcpServer,
  type Server,
  type Socket,
} from 'node:net';
import { etcdserverpb_KV as KV, type MethodDescriptor } from '@etcdkit/client/protocol';
import * as grpc from '@grpc/grpc-js';
import * as fc from 'fast-check';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddedEtcd } from '../../src/index.js';
import { acceptSchemeInAuthority } from '../../src/net/authority-rewriter.js';
import { b, text } from '../support/bytes.js';

const SCHEME_PREFIX = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;

/** A client socket as the rewriter sees it, its data delivered in pieces of the given sizes. */
class Rechunked extends EventEmitter {
  private next = 0;

  constructor(
    private readonly socket: Socket,
    sizes: readonly number[],
  ) {
    super();
    socket.on('data', (data: Buffer) => {
      for (let at = 0; at < data.length; ) {
        const size = sizes[this.next++ % sizes.length]!;
        this.emit('data', data.subarray(at, at + size));
        at += size;
      }
    });
    socket.on('end', () => this.emit('end'));
    socket.on('close', () => this.emit('close'));
    socket.on('error', () => {});
  }
  pause(): this {
    this.socket.pause();
    return this;
  }
  resume(): this {
    this.socket.resume();
    return this;
  }
  write(chunk: Buffer, callback?: (error?: Error | null) => void): boolean {
    return this.socket.write(chunk, callback);
  }
  end(): this {
    this.socket.end();
    return this;
  }
  destroy(): this {
    this.socket.destroy();
    return this;
  }
  cork(): void {
    this.socket.cork();
  }
  uncork(): void {
    this.socket.uncork();
  }
}

const pieceSizes = fc.array(fc.integer({ min: 1, max: 64 }), { minLength: 1, maxLength: 20 });

const headerName = fc.stringMatching(/^x-[a-z0-9-]{1,12}$/);
/** Visible ASCII: what HTTP/2 servers accept in values (no leading or trailing blank). */
const headerValue = fc.oneof(
  fc.constantFrom('a', 'application/grpc', '0'),
  fc.stringMatching(/^[!-~]{0,60}$/),
  fc.stringMatching(/^[!-~]{200,1500}$/),
);
const customHeaders = fc.dictionary(headerName, headerValue, { maxKeys: 8 });

function listen(server: Server): Promise<number> {
  return new Promise((resolve) => {
    server.listen(0, '127.0.0.1', () => {
      const address = server.address();
      resolve(typeof address === 'object' && address !== null ? address.port : 0);
    });
  });
}

function closeTcp(server: Server | undefined): Promise<void> {
  return new Promise((resolve) => (server ? server.close(() => resolve()) : resolve()));
}

/** Only the plain, string-valued headers (Node adds a symbol for sensitive ones). */
function plain(headers: IncomingHttpHeaders): Record<string, string> {
  const out: Record<string, string> = {};
  for (const name of Object.keys(headers)) out[name] = String(headers[name]);
  return out;
}

describe('authority rewriter between Node HTTP/2 client and server', () => {
  let http2: Http2Server;
  let tcp: Server;
  let port = 0;
  /** How the next connection's bytes are cut. */
  let sizes: readonly number[] = [1];
  const seen: Record<string, string>[] = [];

  beforeAll(async () => {
    http2 = createServer();
    http2.on('stream', (stream, headers) => {
      seen.push(plain(headers));
      stream.respond({ ':status': 200 });
      stream.end();
    });
    tcp = createTcpServer((socket) => {
      const rewriter = acceptSchemeInAuthority(new Rechunked(socket, sizes) as unknown as Socket);
      http2.emit('connection', rewriter);
    });
    port = await listen(tcp);
  });

  afterAll(async () => {
    await closeTcp(tcp);
    http2.close();
  });

  it('delivers every request header as sent, the scheme cut off :authority', async () => {
    const schemeAuthority = fc
      .constantFrom('http://', 'https://', 'h2c+x.y-z://')
      .map((scheme) => `${scheme}127.0.0.1:${port}`);
    const plainAuthority = fc.constantFrom(`127.0.0.1:${port}`, `localhost:${port}`);
    const session = fc.boolean().chain((rewritten) =>
      fc.record({
        sizes: pieceSizes,
        requests: fc.array(
          fc.record({
            authority: rewritten ? fc.oneof(schemeAuthority, plainAuthority) : plainAuthority,
            headers: customHeaders,
          }),
          { minLength: 1, maxLength: 6 },
        ),
        first: rewritten ? schemeAuthority : plainAuthority,
      }),
    );
    await fc.assert(
      fc.asyncProperty(session, async ({ sizes: cuts, requests, first }) => {
        sizes = cuts;
        seen.length = 0;
        const all = [{ authority: first, headers: {} }, ...requests];
        const client = connect(`http://127.0.0.1:${port}`);
        try {
          for (const [i, request] of all.entries()) {
            const stream = client.request({
              ':authority': request.authority,
              ':path': `/r/${i}`,
              ...request.headers,
            });
            stream.resume();
            await new Promise((resolve, reject) => {
              stream.on('end', resolve);
              stream.on('error', reject);
            });
          }
        } finally {
          await new Promise<void>((resolve) => client.close(() => resolve()));
        }
        expect(seen).toEqual(
          all.map((request, i) => ({
            ':method': 'GET',
            ':path': `/r/${i}`,
            ':scheme': 'http',
            ':authority': request.authority.replace(SCHEME_PREFIX, ''),
            ...request.headers,
          })),
        );
      }),
      { numRuns: 25 },
    );
  });
});

describe('authority rewriter in front of EmbeddedEtcd, through a TCP proxy that cuts the bytes', () => {
  let etcd: EmbeddedEtcd;
  let proxy: Server;
  let proxyPort = 0;
  let sizes: readonly number[] = [1];
  const sockets = new Set<Socket>();

  beforeAll(async () => {
    etcd = await EmbeddedEtcd.start();
    const etcdPort = Number(new URL(etcd.endpoint).port);
    proxy = createTcpServer((client) => {
      const cuts = sizes;
      const server = createConnection({ host: '127.0.0.1', port: etcdPort, noDelay: true });
      for (const socket of [client, server]) {
        sockets.add(socket);
        socket.on('close', () => sockets.delete(socket));
        socket.on('error', () => {});
      }
      client.setNoDelay(true);
      server.pipe(client);
      // Client to server: each piece written on its own, a turn of the event loop apart.
      let queue = Promise.resolve();
      let next = 0;
      client.on('data', (data: Buffer) => {
        queue = queue.then(async () => {
          for (let at = 0; at < data.length; ) {
            const size = cuts[next++ % cuts.length]!;
            server.write(data.subarray(at, at + size));
            at += size;
            await new Promise((resolve) => setImmediate(resolve));
          }
        });
      });
      client.on('close', () => server.destroy());
      server.on('close', () => client.destroy());
    });
    proxyPort = await listen(proxy);
  });

  afterAll(async () => {
    for (const socket of sockets) socket.destroy();
    await closeTcp(proxy);
    await etcd.stop();
  });

  it('serves calls with random metadata on a connection whose authority has a scheme', async () => {
    const call = fc.record({
      key: fc.stringMatching(/^[a-z0-9/]{1,20}$/),
      value: fc.string({ maxLength: 200 }),
      metadata: customHeaders,
    });
    let run = 0;
    await fc.assert(
      fc.asyncProperty(
        pieceSizes,
        fc.array(call, { minLength: 1, maxLength: 4 }),
        async (cuts, calls) => {
          sizes = cuts;
          const prefix = `e2e/${run++}/`;
          const client = new grpc.Client(
            `127.0.0.1:${proxyPort}`,
            grpc.credentials.createInsecure(),
            { 'grpc.default_authority': `http://127.0.0.1:${proxyPort}` },
          );
          const unary = <Req, Res>(
            method: MethodDescriptor<Req, Res>,
            request: Req,
            metadata: Record<string, string>,
          ): Promise<Res> =>
            new Promise((resolve, reject) => {
              const meta = new grpc.Metadata();
              for (const [name, value] of Object.entries(metadata)) meta.set(name, value);
              client.makeUnaryRequest(
                method.path,
                (message: Req) => Buffer.from(method.request.encode(message).finish()),
                (bytes: Buffer) => method.response.decode(bytes),
                request,
                meta,
                (error, response) => (error ? reject(error) : resolve(response!)),
              );
            });
          try {
            const written = new Map<string, string>();
            for (const { key, value, metadata } of calls) {
              await unary(KV.Put, { key: b(prefix + key), value: b(value) }, metadata);
              written.set(prefix + key, value);
            }
            const range = await unary(
              KV.Range,
              { key: b(prefix), rangeEnd: b(`${prefix.slice(0, -1)}0`) },
              calls[0]!.metadata,
            );
            expect(new Map((range.kvs ?? []).map((kv) => [text(kv.key), text(kv.value)]))).toEqual(
              written,
            );
          } finally {
            client.close();
          }
        },
      ),
      { numRuns: 6 },
    );
  });
});
