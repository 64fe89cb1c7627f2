// The authority rewriter in front of Node's own HTTP/2 server: an :authority with a scheme, which
// nghttp2 would refuse, arrives as host:port on every request of the connection (the client's
// encoder indexes it, so later requests only refer to it); any other connection passes unchanged.
import { connect, createServer, type Http2Server, type ServerHttp2Stream } from 'node:http2';
import {
  createConnection,
  createServer as createTcpServer,
  type Server,
  type Socket,
} from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { acceptSchemeInAuthority } from '../../src/net/authority-rewriter.js';
import { Flag, FrameType, frame, PREFACE, parseFrames } from '../support/hpack-encoder.js';

interface Seen {
  readonly authority: string | undefined;
  readonly path: string | undefined;
  readonly custom: string | undefined;
}

describe('acceptSchemeInAuthority', () => {
  let tcp: Server | undefined;
  let http2: Http2Server | undefined;

  afterEach(async () => {
    await new Promise((resolve) => tcp?.close(resolve) ?? resolve(undefined));
    http2?.close();
  });

  /** An HTTP/2 server behind the filter; `onUnixSocket` filters as for a unix socket's clients. */
  async function start(seen: Seen[], onUnixSocket = false): Promise<number> {
    http2 = createServer();
    http2.on('stream', (stream: ServerHttp2Stream, headers) => {
      seen.push({
        authority: headers[':authority'],
        path: headers[':path'],
        custom: headers['x-custom'] as string | undefined,
      });
      stream.respond({ ':status': 200 });
      stream.end('ok');
    });
    const server = http2;
    tcp = createTcpServer((socket) =>
      server.emit('connection', acceptSchemeInAuthority(socket, onUnixSocket)),
    );
    await new Promise<void>((resolve) => tcp!.listen(0, '127.0.0.1', resolve));
    const address = tcp.address();
    return typeof address === 'object' && address !== null ? address.port : 0;
  }

  async function requests(port: number, authority: string, count: number): Promise<string[]> {
    const session = connect(`http://127.0.0.1:${port}`);
    try {
      const bodies: string[] = [];
      for (let i = 0; i < count; i++) {
        const stream = session.request({
          ':authority': authority,
          ':path': `/call/${i}`,
          'x-custom': `value-${i % 3}`,
        });
        let body = '';
        stream.setEncoding('utf8');
        stream.on('data', (chunk: string) => {
          body += chunk;
        });
        await new Promise((resolve, reject) => {
          stream.on('end', resolve);
          stream.on('error', reject);
        });
        bodies.push(body);
      }
      return bodies;
    } finally {
      session.close();
    }
  }

  it('cuts the scheme off the authority of every request on the connection', async () => {
    const seen: Seen[] = [];
    const port = await start(seen);
    const bodies = await requests(port, `http://127.0.0.1:${port}`, 20);
    expect(bodies).toEqual(Array.from({ length: 20 }, () => 'ok'));
    expect(seen).toEqual(
      Array.from({ length: 20 }, (_, i) => ({
        authority: `127.0.0.1:${port}`,
        path: `/call/${i}`,
        custom: `value-${i % 3}`,
      })),
    );
  });

  it.each(['/tmp/etcdkit/etcd.sock', 'unix:///tmp/etcdkit/etcd.sock'])(
    'on a unix socket, makes a socket path authority (etcdctl 3.4 there: %s) localhost',
    async (authority) => {
      const seen: Seen[] = [];
      const port = await start(seen, true);
      expect(await requests(port, authority, 3)).toEqual(['ok', 'ok', 'ok']);
      expect(seen.map((s) => s.authority)).toEqual(['localhost', 'localhost', 'localhost']);
    },
  );

  it('passes a connection with a plain authority through unchanged', async () => {
    const seen: Seen[] = [];
    const port = await start(seen);
    await requests(port, `localhost:${port}`, 5);
    expect(seen.map((s) => s.authority)).toEqual(
      Array.from({ length: 5 }, () => `localhost:${port}`),
    );
  });

  it('hands over what is not HTTP/2 unchanged, for the server to refuse', async () => {
    const seen: Seen[] = [];
    const port = await start(seen);
    const socket = createConnection({ host: '127.0.0.1', port });
    socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    const closed = await new Promise<boolean>((resolve) => {
      socket.on('close', () => resolve(true));
      socket.on('error', () => {});
      socket.resume();
    });
    expect(closed).toBe(true);
    expect(seen).toEqual([]);
  });
});

/** What a raw HTTP/2 client got back, and what the server's request handler saw. */
interface Exchange {
  /** The server's frames, SETTINGS aside (whether it acknowledged the client's is a matter of timing). */
  readonly frames: string[];
  readonly requests: { readonly authority: string | undefined; readonly body: string }[];
}

const ERROR_CODES: Record<number, string> = { 1: 'PROTOCOL_ERROR', 9: 'COMPRESSION_ERROR' };

function describeFrames(bytes: Buffer): string[] {
  return parseFrames(bytes.subarray(0, bytes.length - trailingPartialFrame(bytes)))
    .filter((f) => f.type !== FrameType.SETTINGS)
    .map((f) => {
      if (f.type === FrameType.GOAWAY) {
        const code = f.payload.readUInt32BE(4);
        return `GOAWAY ${f.payload.readUInt32BE(0)} ${ERROR_CODES[code] ?? code}`;
      }
      if (f.type === FrameType.RST_STREAM) {
        const code = f.payload.readUInt32BE(0);
        return `RST_STREAM ${f.streamId} ${ERROR_CODES[code] ?? code}`;
      }
      return `type ${f.type} stream ${f.streamId}`;
    });
}

/** Octets at the end of `bytes` that do not make a whole frame. */
function trailingPartialFrame(bytes: Buffer): number {
  let at = 0;
  while (at + 9 <= bytes.length && at + 9 + bytes.readUIntBE(at, 3) <= bytes.length) {
    at += 9 + bytes.readUIntBE(at, 3);
  }
  return bytes.length - at;
}

describe('acceptSchemeInAuthority, compared with Node’s HTTP/2 server reached directly', () => {
  const hex = (text: string) => Buffer.from(text.replaceAll(' ', ''), 'hex');
  /** ":method: GET", ":scheme: http", ":path: /", then ":authority" without indexing. */
  const requestBlock = (authority: string) =>
    Buffer.concat([hex('82 86 84 01'), Buffer.from([authority.length]), Buffer.from(authority)]);
  const SETTINGS = frame(FrameType.SETTINGS, 0, 0, Buffer.alloc(0));

  /**
   * Sends `bytes` (after the preface and an empty SETTINGS frame) from a raw client to an HTTP/2
   * server whose handler answers nothing, through the filter or not, and ends the client's side
   * if `end`. Then waits for the server's session to close or for a GOAWAY (after which Node's
   * server neither closes the connection nor reads from it), two seconds at most.
   */
  async function exchange(filtered: boolean, bytes: Buffer, end: boolean): Promise<Exchange> {
    const requests: { authority: string | undefined; body: string }[] = [];
    const http2 = createServer();
    http2.on('stream', (stream: ServerHttp2Stream, headers) => {
      const request = { authority: headers[':authority'], body: '' };
      requests.push(request);
      stream.on('data', (chunk: Buffer) => {
        request.body += chunk.toString('latin1');
      });
      stream.on('error', () => {});
    });
    const sessionClosed = new Promise<void>((resolve) =>
      http2.on('session', (session) => session.on('close', resolve)),
    );
    const sockets: Socket[] = [];
    const tcp = createTcpServer({ noDelay: true }, (socket) => {
      sockets.push(socket);
      http2.emit('connection', filtered ? acceptSchemeInAuthority(socket) : socket);
    });
    try {
      await new Promise<void>((resolve) => tcp.listen(0, '127.0.0.1', resolve));
      const address = tcp.address();
      const port = typeof address === 'object' && address !== null ? address.port : 0;
      const client = createConnection({ host: '127.0.0.1', port, allowHalfOpen: true });
      client.on('error', () => {});
      const received: Buffer[] = [];
      const goaway = new Promise<void>((resolve) =>
        client.on('data', (chunk: Buffer) => {
          received.push(chunk);
          if (describeFrames(Buffer.concat(received)).some((f) => f.startsWith('GOAWAY'))) {
            resolve();
          }
        }),
      );
      client.write(Buffer.concat([PREFACE, SETTINGS, bytes]));
      if (end) client.end();
      // Bounded, so that a server that does not answer fails the test with what it did send.
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([
        sessionClosed,
        goaway,
        new Promise((resolve) => {
          timer = setTimeout(resolve, 2000);
        }),
      ]);
      clearTimeout(timer);
      client.destroy();
      return { frames: describeFrames(Buffer.concat(received)), requests };
    } finally {
      for (const socket of sockets) socket.destroy();
      await new Promise((resolve) => tcp.close(resolve));
      http2.close();
    }
  }

  it('answers a first header block with a size update after a field as the server does', async () => {
    // RFC 7541, 4.2: the update (to 0) may only open a block. The block was rewritten before
    // (its :authority has a scheme), and so reached the server as a valid request.
    const block = frame(
      FrameType.HEADERS,
      Flag.END_HEADERS | Flag.END_STREAM,
      1,
      Buffer.concat([requestBlock('http://127.0.0.1:1'), hex('20')]),
    );
    const expected: Exchange = { frames: ['GOAWAY 1 COMPRESSION_ERROR'], requests: [] };
    expect(await exchange(false, block, false)).toEqual(expected);
    expect(await exchange(true, block, false)).toEqual(expected);
  });

  it('answers such a block on a rewritten connection as the server does on a plain one', async () => {
    // The second block: ":method: GET", then the update; it was rewritten as a valid request.
    const second = frame(FrameType.HEADERS, Flag.END_HEADERS | Flag.END_STREAM, 3, hex('82 20'));
    const first = (authority: string) =>
      frame(FrameType.HEADERS, Flag.END_HEADERS | Flag.END_STREAM, 1, requestBlock(authority));
    const expected: Exchange = {
      frames: ['GOAWAY 3 COMPRESSION_ERROR'],
      requests: [{ authority: '127.0.0.1:1', body: '' }],
    };
    expect(await exchange(false, Buffer.concat([first('127.0.0.1:1'), second]), false)).toEqual(
      expected,
    );
    expect(
      await exchange(true, Buffer.concat([first('http://127.0.0.1:1'), second]), false),
    ).toEqual(expected);
  });

  it('hands a header block cut short by the client’s end to the server, which refuses it', async () => {
    // A HEADERS frame without END_HEADERS, and the client's end instead of a CONTINUATION. The
    // server reads the fields as they come, and resets the stream for the authority's scheme
    // (the block never completed, so the filter had not decided to rewrite the connection).
    const open = frame(FrameType.HEADERS, 0, 1, requestBlock('http://127.0.0.1:1'));
    const expected: Exchange = { frames: ['RST_STREAM 1 PROTOCOL_ERROR'], requests: [] };
    expect(await exchange(false, open, true)).toEqual(expected);
    expect(await exchange(true, open, true)).toEqual(expected);
  });

  it('hands a cut block with a size update after a field over, on a rewritten connection', async () => {
    // HEADERS without END_HEADERS, stream 3: ":method: GET", an update to 0, ":path: /". The
    // server decodes fields as they arrive, and refuses the update before the block's end.
    const first = (authority: string) =>
      frame(FrameType.HEADERS, Flag.END_HEADERS | Flag.END_STREAM, 1, requestBlock(authority));
    const cut = frame(FrameType.HEADERS, 0, 3, hex('82 20 84'));
    const expected: Exchange = {
      frames: ['GOAWAY 3 COMPRESSION_ERROR'],
      requests: [{ authority: '127.0.0.1:1', body: '' }],
    };
    expect(await exchange(false, Buffer.concat([first('127.0.0.1:1'), cut]), true)).toEqual(
      expected,
    );
    expect(await exchange(true, Buffer.concat([first('http://127.0.0.1:1'), cut]), true)).toEqual(
      expected,
    );
  });

  it('hands the start of a DATA frame cut short by the client’s end to its stream', async () => {
    // Node's server delivers a DATA payload as its octets arrive, whole frame or not.
    const data = frame(FrameType.DATA, 0, 1, Buffer.from('0123456789abcdefghijklmnopqrstuvwxyz'));
    const cut = (authority: string) =>
      Buffer.concat([
        frame(FrameType.HEADERS, Flag.END_HEADERS, 1, requestBlock(authority)),
        data.subarray(0, 9 + 21),
      ]);
    const expected: Exchange = {
      frames: [],
      requests: [{ authority: '127.0.0.1:1', body: '0123456789abcdefghijk' }],
    };
    expect(await exchange(false, cut('127.0.0.1:1'), true)).toEqual(expected);
    expect(await exchange(true, cut('http://127.0.0.1:1'), true)).toEqual(expected);
  });
});
