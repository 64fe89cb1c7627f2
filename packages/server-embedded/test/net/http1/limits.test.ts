// The HTTP/1.x side of the client port keeps what a peer can make it hold bounded: the head it
// buffers, the time a head may take, an idle keep-alive connection, answers the peer does not
// read, and a body too large to skip.
import { connect, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { DEFAULT_HTTP1_LIMITS, type Http1Limits } from '../../../src/net/http1/connection.js';
import type { MemberView } from '../../../src/net/http1/member-view.js';
import { exchange, get, parseResponses } from './raw-http.js';
import { handView, serveView, type ViewServer } from './view-server.js';

const LIMITS: Http1Limits = {
  ...DEFAULT_HTTP1_LIMITS,
  maxHeadBytes: 4096,
  headTimeoutMs: 300,
  idleTimeoutMs: 300,
  maxUnreadBytes: 16 * 1024,
  // Long enough for the test that stops reading to look twice and read again.
  unreadTimeoutMs: 30_000,
  maxDiscardBytes: 1024,
};

let server: ViewServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

function open(port: number): Promise<Socket> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port }, () => resolve(socket));
  });
}

/** A healthy view that counts the requests served: /health reads the alarms once per request. */
function countingView(): { view: MemberView; answered: () => number; reset: () => void } {
  const view = handView('3.5', '3.5.30');
  let answered = 0;
  return {
    view: {
      ...view,
      alarms: () => {
        answered++;
        return view.alarms();
      },
    },
    answered: () => answered,
    reset: () => {
      answered = 0;
    },
  };
}

function closed(socket: Socket): Promise<string> {
  let received = '';
  socket.on('data', (chunk: Buffer) => {
    received += chunk.toString('latin1');
  });
  return new Promise((resolve) => socket.on('close', () => resolve(received)));
}

describe('HTTP/1.x limits', () => {
  it('a head past the limit, sent in pieces without its end, gets 431 and the connection ends', async () => {
    server = await serveView(handView('3.5', '3.5.30'), LIMITS);
    const socket = await open(server.port);
    const ended = closed(socket);
    socket.write('GET /health HTTP/1.1\r\nHost: a\r\n');
    for (let i = 0; i < 10; i++) socket.write(`X-Filler-${i}: ${'a'.repeat(500)}\r\n`);
    const received = await ended;
    expect(received.split('\r\n')[0]).toBe('HTTP/1.1 431 Request Header Fields Too Large');
  });

  it('a head that stops arriving is dropped after the head limit, unanswered', async () => {
    server = await serveView(handView('3.5', '3.5.30'), LIMITS);
    const socket = await open(server.port);
    const ended = closed(socket);
    socket.write('GET /health HTTP/1.1\r\nHost:');
    expect(await ended).toBe('');
  });

  it('a head sent one octet at a time is still bounded by the head limit', async () => {
    server = await serveView(handView('3.5', '3.5.30'), LIMITS);
    const socket = await open(server.port);
    const ended = closed(socket);
    const head = get('/health');
    let sent = 0;
    // Each octet resets no timer: the head limit counts from the first octet of the request.
    const drip = setInterval(() => {
      if (sent < head.length && !socket.destroyed) socket.write(head[sent++]!);
    }, 50);
    try {
      expect(await ended).toBe('');
      expect(sent).toBeLessThan(head.length);
    } finally {
      clearInterval(drip);
    }
  });

  it('an idle keep-alive connection is closed after the idle limit', async () => {
    server = await serveView(handView('3.5', '3.5.30'), LIMITS);
    const socket = await open(server.port);
    const ended = closed(socket);
    socket.write(get('/version'));
    const responses = parseResponses(Buffer.from(await ended, 'latin1'), false);
    expect(responses.map((response) => response.status)).toEqual([200]);
  });

  it('answers left unread past the limit for the unread time end the connection', async () => {
    const counted = countingView();
    server = await serveView(counted.view, { ...LIMITS, unreadTimeoutMs: 300 });
    const socket = connect({ host: '127.0.0.1', port: server.port });
    // The server's reset of a connection still being written to is the expected end.
    socket.on('error', () => {});
    socket.pause();
    // About 23 MB of answers: more than the kernel buffers and the 16 KiB limit hold.
    const requests = 100_000;
    socket.write(get('/health').repeat(requests));
    await new Promise((resolve) => socket.on('close', resolve));
    // The server stopped answering and ended the connection with requests still to serve. (Not
    // the peer's bytesRead: Bun's paused socket still reads what the kernel holds when it resets.)
    expect(counted.answered()).toBeGreaterThan(0);
    expect(counted.answered()).toBeLessThan(requests);
  }, 60_000);

  it('a body too large to skip is answered, then the connection ends', async () => {
    server = await serveView(handView('3.5', '3.5.30'), LIMITS);
    const body = 'x'.repeat(2048);
    const result = await exchange(
      server.port,
      `POST /version HTTP/1.1\r\nHost: a\r\nContent-Length: ${body.length}\r\n\r\n${body}${get('/version')}`,
      { untilClose: true },
    );
    expect(result.responses.map((response) => response.status)).toEqual([405]);
    expect(result.responses[0]!.headers).toContainEqual(['Connection', 'close']);
    expect(result.closed).toBe(true);
  });

  it('a peer that pipelines and never reads stops being read; reading resumes it in order', async () => {
    const counted = countingView();
    server = await serveView(counted.view, LIMITS);
    // Every answer has the same length (the Date field's is fixed): learn it from one.
    const one = await exchange(server.port, get('/health'), { responses: 1 });
    const size = Buffer.byteLength(
      `${one.responses[0]!.statusLine}\r\n${one.responses[0]!.headers.map(([n, v]) => `${n}: ${v}\r\n`).join('')}\r\n${one.responses[0]!.body}`,
    );
    counted.reset();
    // Far more answers (about 23 MB) than the kernel's socket buffers hold.
    const requests = 100_000;
    const socket = connect({ host: '127.0.0.1', port: server.port });
    socket.pause();
    socket.write(get('/health').repeat(requests));
    // Wait until the server has stopped answering: it has begun, and two looks 200 ms apart
    // agree. (Without "begun", a loaded run's two looks could both see 0 before the first answer.)
    let last = -1;
    const deadline = Date.now() + 60_000;
    while ((counted.answered() === 0 || counted.answered() !== last) && Date.now() < deadline) {
      last = counted.answered();
      await new Promise((resolve) => setTimeout(resolve, 200));
    }
    expect(counted.answered()).toBeGreaterThan(0);
    expect(counted.answered()).toBeLessThan(requests);
    // Reading again lets every answer through.
    let received = 0;
    let tail = '';
    await new Promise<void>((resolve) => {
      socket.on('data', (chunk: Buffer) => {
        received += chunk.length;
        if (received >= requests * size) {
          tail = chunk.subarray(chunk.length - 29).toString();
          resolve();
        }
      });
      socket.resume();
    });
    socket.destroy();
    expect(received).toBe(requests * size);
    expect(tail).toBe('{"health":"true","reason":""}');
    expect(counted.answered()).toBe(requests);
  }, 120_000);
});
