// The authority rewriter in front of Node's own HTTP/2 server: an :authority with a scheme, which
// nghttp2 would refuse, arrives as host:port on every request of the connection (the client's
// encoder indexes it, so later requests only refer to it); any other connection passes unchanged.
import { connect, createServer, type Http2Server, type ServerHttp2Stream } from 'node:http2';
import { createServer as createTcpServer, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { acceptSchemeInAuthority } from '../../src/server/authority-rewriter.js';

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

  async function start(seen: Seen[]): Promise<number> {
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
    tcp = createTcpServer((socket) => server.emit('connection', acceptSchemeInAuthority(socket)));
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
    const { createConnection } = await import('node:net');
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
