// The h2 transport's HTTP/2 connection against servers that break the protocol or try to make the
// client hold memory, over real loopback TCP: a PING or SETTINGS flood from a server that reads
// nothing, window overflows, an endless header block, a flood of RST_STREAM, and a server that
// never sends its SETTINGS. Each must end the connection with the protocol error in the message,
// with the client's pending ACKs within their cap meanwhile.
import { connect, createServer, type Server, type Socket } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import {
  CANCEL,
  ENHANCE_YOUR_CALM,
  encodeLiterals,
  FLOW_CONTROL_ERROR,
  FRAME_CONTINUATION,
  FRAME_GOAWAY,
  FRAME_HEADERS,
  FRAME_PING,
  frameOf,
  INTERNAL_ERROR,
  MAX_WINDOW,
  PREFACE,
  rstStreamFrame,
  SETTINGS_INITIAL_WINDOW_SIZE,
  type SessionLimits,
  settingsFrame,
  windowUpdateFrame,
} from '../../src/transport/h2/index.js';
import { H2Connection } from '../../src/transport/h2-connection.js';
import { streamEvents } from './stream-events.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** What a malicious server does with each connection. */
type Script = (socket: Socket) => void | Promise<void>;

/** Frames as a peer reads them: type, stream and payload of each, after the client preface. */
function framesOf(bytes: Buffer): { type: number; streamId: number; payload: Buffer }[] {
  const frames: { type: number; streamId: number; payload: Buffer }[] = [];
  let at = bytes.subarray(0, PREFACE.length).equals(PREFACE) ? PREFACE.length : 0;
  while (bytes.length - at >= 9) {
    const length = bytes.readUIntBE(at, 3);
    if (bytes.length - at < 9 + length) break;
    frames.push({
      type: bytes[at + 3]!,
      streamId: bytes.readUInt32BE(at + 5) & 0x7fff_ffff,
      payload: bytes.subarray(at + 9, at + 9 + length),
    });
    at += 9 + length;
  }
  return frames;
}

/**
 * A server running `script` on its connection, and an H2Connection to it. `received`: what the
 * client wrote, for a server that reads.
 */
async function against(script: Script, limits?: SessionLimits, reads = true) {
  const received: Buffer[] = [];
  const server: Server = createServer((socket) => {
    socket.on('error', () => {});
    if (reads) socket.on('data', (chunk: Buffer) => received.push(chunk));
    cleanups.push(() => socket.destroy());
    void script(socket);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((resolve) => server.close(resolve)));
  const { port } = server.address() as { port: number };
  const socket = connect(port, '127.0.0.1');
  let ready!: () => void;
  const readyP = new Promise<void>((resolve) => {
    ready = resolve;
  });
  let closed!: (error: Error | undefined) => void;
  const closedP = new Promise<Error | undefined>((resolve) => {
    closed = resolve;
  });
  const connection = new H2Connection(
    socket,
    {
      scheme: 'http',
      authority: `127.0.0.1:${port}`,
      contentType: 'application/grpc',
      userAgent: 'test',
    },
    { onReady: () => ready(), onGoaway: () => {}, onClose: (error) => closed(error) },
    limits,
  );
  cleanups.push(() => connection.destroy());
  return {
    connection,
    ready: readyP,
    closed: closedP,
    /** The client's frames the server read. */
    frames: () => framesOf(Buffer.concat(received)),
  };
}

/** Writes `frame` over and over, in batches, as fast as the socket takes it, until it closes. */
async function flood(socket: Socket, frame: Buffer, stopped: () => boolean): Promise<void> {
  const batch = Buffer.concat(Array.from({ length: 1000 }, () => frame));
  while (!socket.destroyed && !stopped()) {
    if (!socket.write(batch)) {
      await new Promise((resolve) => {
        socket.once('drain', resolve);
        socket.once('close', resolve);
      });
    }
  }
}

/** The largest value of `read` over time, sampled every millisecond until stopped. */
function sample(read: () => number) {
  let max = 0;
  const timer = setInterval(() => {
    max = Math.max(max, read());
  }, 1);
  cleanups.push(() => clearInterval(timer));
  return () => {
    clearInterval(timer);
    return Math.max(max, read());
  };
}

const silent = streamEvents();

/** The GOAWAY code the client sent, if any. */
function goawayCode(frames: { type: number; payload: Buffer }[]): number | undefined {
  return frames.find((frame) => frame.type === FRAME_GOAWAY)?.payload.readUInt32BE(4);
}

describe('H2Connection against a malicious server', () => {
  it('ends a PING flood from a server that reads nothing at 1,000 ACKs unwritten', async () => {
    let done = false;
    const client = await against(
      async (socket) => {
        socket.write(settingsFrame([]));
        await flood(socket, frameOf(FRAME_PING, 0, 0, Buffer.alloc(8)), () => done);
      },
      undefined,
      false,
    );
    const acks = sample(() => client.connection.pendingAcks);
    const error = await client.closed;
    done = true;
    expect(error?.message).toBe(
      'HTTP/2 protocol error: more than 1000 PING and SETTINGS ACKs unwritten (the peer does not read)',
    );
    expect(acks()).toBeLessThanOrEqual(1000);
    expect(client.connection.destroyed).toBe(true);
  });

  it('ends a SETTINGS flood from a server that reads nothing at 1,000 ACKs unwritten', async () => {
    let done = false;
    const client = await against(
      async (socket) => {
        socket.write(settingsFrame([]));
        await flood(socket, settingsFrame([[SETTINGS_INITIAL_WINDOW_SIZE, 65_535]]), () => done);
      },
      undefined,
      false,
    );
    const acks = sample(() => client.connection.pendingAcks);
    const error = await client.closed;
    done = true;
    expect(error?.message).toMatch(
      /^HTTP\/2 protocol error: more than 1000 PING and SETTINGS ACKs/,
    );
    expect(acks()).toBeLessThanOrEqual(1000);
  });

  it('ends the connection with FLOW_CONTROL_ERROR when a new initial window overflows a stream window', async () => {
    let server!: Socket;
    const client = await against((socket) => {
      server = socket;
      socket.write(settingsFrame([]));
    });
    await client.ready;
    client.connection.request('/p', [], silent, [], false);
    await new Promise((resolve) => setTimeout(resolve, 20));
    // The stream's window at 2^31-1, then an initial window that adds to it (RFC 9113, 6.9.2).
    server.write(
      Buffer.concat([
        windowUpdateFrame(1, MAX_WINDOW - 65_535),
        settingsFrame([[SETTINGS_INITIAL_WINDOW_SIZE, MAX_WINDOW]]),
      ]),
    );
    const error = await client.closed;
    expect(error?.message).toBe('HTTP/2 protocol error: a stream window above 2^31-1');
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(goawayCode(client.frames())).toBe(FLOW_CONTROL_ERROR);
  });

  it('ends the connection with FLOW_CONTROL_ERROR when the connection window overflows', async () => {
    const client = await against((socket) => {
      socket.write(Buffer.concat([settingsFrame([]), windowUpdateFrame(0, MAX_WINDOW)]));
    });
    const error = await client.closed;
    expect(error?.message).toBe('HTTP/2 protocol error: connection window above 2^31-1');
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(goawayCode(client.frames())).toBe(FLOW_CONTROL_ERROR);
  });

  it('ends an endless header block at the 9th CONTINUATION frame', async () => {
    const client = await against((socket) => {
      const block = encodeLiterals([{ name: ':status', value: '200', sensitive: false }]);
      const frames = [settingsFrame([]), frameOf(FRAME_HEADERS, 0, 1, block)];
      for (let i = 0; i < 100; i++) {
        frames.push(frameOf(FRAME_CONTINUATION, 0, 1, Buffer.alloc(16_384)));
      }
      socket.write(Buffer.concat(frames));
    });
    const error = await client.closed;
    expect(error?.message).toBe(
      'HTTP/2 protocol error: a header block of more than 8 CONTINUATION frames',
    );
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(goawayCode(client.frames())).toBe(INTERNAL_ERROR);
  });

  it('ends a flood of RST_STREAM with ENHANCE_YOUR_CALM', async () => {
    let done = false;
    const client = await against(async (socket) => {
      socket.write(settingsFrame([]));
      await flood(socket, rstStreamFrame(1, CANCEL), () => done);
    });
    const error = await client.closed;
    done = true;
    expect(error?.message).toBe('HTTP/2 protocol error: too many RST_STREAM frames');
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(goawayCode(client.frames())).toBe(ENHANCE_YOUR_CALM);
  });

  it('ends a connection whose server never sends SETTINGS after the settings timeout', async () => {
    const client = await against(() => {}, { settingsTimeoutMs: 200 });
    const error = await client.closed;
    expect(error?.message).toBe(
      'HTTP/2 protocol error: no preface and SETTINGS from the peer in 200 ms',
    );
    await new Promise((resolve) => setTimeout(resolve, 20));
    expect(goawayCode(client.frames())).toBe(0x4);
  });
});
