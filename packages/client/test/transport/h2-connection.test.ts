// The h2 transport's HTTP/2 connection against a scripted server on the other end of an in-memory
// socket pair: what it writes, frame by frame (one socket write per tick), and how it follows the
// server's settings, windows, GOAWAY, RST_STREAM, CONTINUATION and PING.

import { once } from 'node:events';
import type { IncomingHttpHeaders } from 'node:http2';
import { createServer, Socket } from 'node:net';
import { type Duplex, duplexPair } from 'node:stream';
import { describe, expect, it } from 'vitest';
import {
  CANCEL,
  encodeLiterals,
  FLAG_ACK,
  FLAG_END_HEADERS,
  FLAG_END_STREAM,
  FRAME_CONTINUATION,
  FRAME_DATA,
  FRAME_GOAWAY,
  FRAME_HEADERS,
  FRAME_PING,
  FRAME_RST_STREAM,
  FRAME_SETTINGS,
  FRAME_WINDOW_UPDATE,
  frameOf,
  goawayFrame,
  HeaderBlockDecoder,
  PREFACE,
  REFUSED_STREAM,
  rstStreamFrame,
  SETTINGS_INITIAL_WINDOW_SIZE,
  SETTINGS_MAX_CONCURRENT_STREAMS,
  settingsFrame,
  windowUpdateFrame,
} from '../../src/transport/h2/index.js';
import {
  CONNECTION_WINDOW,
  H2Connection,
  type H2StreamEvents,
  STREAM_WINDOW,
} from '../../src/transport/h2-connection.js';

interface Frame {
  readonly type: number;
  readonly flags: number;
  readonly streamId: number;
  readonly payload: Buffer;
}

/** The server's side: the client's writes as they came, parsed into frames. */
class ScriptedServer {
  /** One entry per write the client made. */
  readonly writes: Buffer[] = [];
  readonly frames: Frame[] = [];
  readonly decoder = new HeaderBlockDecoder();
  #buffer = Buffer.alloc(0);
  #prefaceSeen = false;
  #wake: (() => void) | undefined;

  constructor(readonly socket: Duplex) {
    socket.on('data', (chunk: Buffer) => {
      this.writes.push(chunk);
      this.#buffer = Buffer.concat([this.#buffer, chunk]);
      if (!this.#prefaceSeen && this.#buffer.length >= PREFACE.length) {
        expect(this.#buffer.subarray(0, PREFACE.length).equals(PREFACE)).toBe(true);
        this.#buffer = this.#buffer.subarray(PREFACE.length);
        this.#prefaceSeen = true;
      }
      while (this.#prefaceSeen && this.#buffer.length >= 9) {
        const length = this.#buffer.readUIntBE(0, 3);
        if (this.#buffer.length < 9 + length) break;
        this.frames.push({
          type: this.#buffer[3]!,
          flags: this.#buffer[4]!,
          streamId: this.#buffer.readUInt32BE(5),
          payload: Buffer.from(this.#buffer.subarray(9, 9 + length)),
        });
        this.#buffer = this.#buffer.subarray(9 + length);
      }
      this.#wake?.();
    });
  }

  /** Waits for the client's first frame after `from` that matches, and returns it. */
  async next(match: (frame: Frame) => boolean, from = 0): Promise<Frame> {
    for (;;) {
      const found = this.frames.slice(from).find(match);
      if (found) return found;
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
    }
  }

  send(...frames: Buffer[]): void {
    this.socket.write(Buffer.concat(frames));
  }

  /**
   * Sends a PING and waits for its ACK: the client handles frames in order, so whatever it wrote
   * in answer to what was sent before is in `frames` by then.
   */
  async roundTrip(...frames: Buffer[]): Promise<void> {
    const from = this.frames.length;
    const payload = Buffer.from('roundtrp');
    this.send(...frames, frameOf(FRAME_PING, 0, 0, payload));
    await this.next((f) => f.type === FRAME_PING && f.flags === FLAG_ACK, from);
  }

  dataBytes(streamId: number): number {
    return this.frames
      .filter((f) => f.type === FRAME_DATA && f.streamId === streamId)
      .reduce((sum, f) => sum + f.payload.length, 0);
  }
}

/** What a stream reported, in order. */
function recorder() {
  const seen: string[] = [];
  const headers: IncomingHttpHeaders[] = [];
  let data = 0;
  const events: H2StreamEvents = {
    onHeaders: (h, end) => {
      headers.push(h);
      seen.push(end ? 'trailers' : 'headers');
    },
    onData: (chunk) => {
      data += chunk.length;
      seen.push('data');
    },
    onEnd: () => seen.push('end'),
    onReset: (code) => seen.push(`reset ${code}`),
    onDropped: (error, unsent) => seen.push(`dropped${unsent ? ' unsent' : ''}: ${error.message}`),
    onRefused: (error) => seen.push(`refused: ${error.message}`),
  };
  return {
    events,
    seen,
    headers,
    get data() {
      return data;
    },
  };
}

const TEMPLATE = {
  scheme: 'http',
  authority: 'localhost',
  contentType: 'application/grpc+proto',
  userAgent: 'etcdkit-h2',
} as const;

/** A connection and its scripted server, the handshake done with `settings`. */
async function connected(
  settings: ReadonlyArray<readonly [number, number]> = [],
  [clientSide, serverSide]: [Duplex, Duplex] = duplexPair(),
) {
  const log: string[] = [];
  let ready = false;
  let reportClosed: () => void = () => {};
  const closed = new Promise<void>((resolve) => {
    reportClosed = resolve;
  });
  const connection = new H2Connection(clientSide, TEMPLATE, {
    onReady: () => {
      ready = true;
    },
    onGoaway: (code, last) => log.push(`goaway ${code} ${last}`),
    onClose: (error) => {
      log.push(`close${error ? `: ${error.message}` : ''}`);
      reportClosed();
    },
  });
  const server = new ScriptedServer(serverSide);
  await server.next((f) => f.type === FRAME_WINDOW_UPDATE);
  expect(ready).toBe(false);
  await server.roundTrip(settingsFrame(settings));
  expect(ready).toBe(true);
  return { connection, server, log, closed };
}

/** Both ends of a loopback TCP connection: reads come as the event loop polls them, as in use. */
async function tcpPair(): Promise<[Socket, Socket]> {
  const listener = createServer();
  listener.listen(0, '127.0.0.1');
  await once(listener, 'listening');
  const { port } = listener.address() as { port: number };
  const accepted = once(listener, 'connection');
  const client = new Socket().connect(port, '127.0.0.1');
  const [server] = (await accepted) as [Socket];
  await once(client, 'connect');
  listener.close();
  return [client, server];
}

const literal = (fields: Array<[string, string]>) =>
  encodeLiterals(fields.map(([name, value]) => ({ name, value, sensitive: false })));
const headersFrame = (streamId: number, fields: Array<[string, string]>, end = false) =>
  frameOf(FRAME_HEADERS, FLAG_END_HEADERS | (end ? FLAG_END_STREAM : 0), streamId, literal(fields));
const dataFrame = (streamId: number, bytes: number, end = false) =>
  frameOf(FRAME_DATA, end ? FLAG_END_STREAM : 0, streamId, Buffer.alloc(bytes, 1));
const OK_HEADERS: Array<[string, string]> = [
  [':status', '200'],
  ['content-type', 'application/grpc'],
];

describe('H2Connection', () => {
  it('opens with the preface, SETTINGS and a connection WINDOW_UPDATE; ready on the server SETTINGS, which it acks', async () => {
    const { server } = await connected();
    const [settings, update, ack] = server.frames;
    expect(settings).toEqual({
      type: FRAME_SETTINGS,
      flags: 0,
      streamId: 0,
      // ENABLE_PUSH 0, INITIAL_WINDOW_SIZE 512 KiB.
      payload: Buffer.from('000200000000000400080000', 'hex'),
    });
    expect(update!.payload.readUInt32BE(0)).toBe(CONNECTION_WINDOW - 65_535);
    expect(ack).toEqual({
      type: FRAME_SETTINGS,
      flags: FLAG_ACK,
      streamId: 0,
      payload: Buffer.alloc(0),
    });
    // The preface and the first frames left in one write.
    expect(server.writes[0]!.subarray(0, PREFACE.length).equals(PREFACE)).toBe(true);
    expect(server.writes[0]!.length).toBe(PREFACE.length + 9 + 12 + 9 + 4);
  });

  it('writes a unary call as HEADERS and DATA in one write, and reports the answer in order', async () => {
    const { connection, server } = await connected();
    const calls = recorder();
    const writes = server.writes.length;
    const stream = connection.request(
      '/etcdserverpb.KV/Range',
      [['grpc-timeout', '5000m']],
      calls.events,
      [Buffer.from('request')],
      true,
    );
    expect(stream.opened).toBe(true);
    const data = await server.next((f) => f.type === FRAME_DATA);
    expect(server.writes.length).toBe(writes + 1);
    const headers = server.frames.at(-2)!;
    expect(headers.type).toBe(FRAME_HEADERS);
    expect(headers.flags).toBe(FLAG_END_HEADERS);
    expect(headers.streamId).toBe(1);
    expect(server.decoder.decode(headers.payload).map((f) => `${f.name}: ${f.value}`)).toEqual([
      ':method: POST',
      ':scheme: http',
      ':path: /etcdserverpb.KV/Range',
      ':authority: localhost',
      'content-type: application/grpc+proto',
      'te: trailers',
      'user-agent: etcdkit-h2',
      'grpc-timeout: 5000m',
    ]);
    expect(data).toEqual({
      type: FRAME_DATA,
      flags: FLAG_END_STREAM,
      streamId: 1,
      payload: Buffer.from('request'),
    });
    await server.roundTrip(
      headersFrame(1, OK_HEADERS),
      dataFrame(1, 10),
      headersFrame(1, [['grpc-status', '0']], true),
    );
    expect(calls.seen).toEqual(['headers', 'data', 'trailers', 'end']);
    expect(calls.headers[0]).toEqual({ ':status': 200, 'content-type': 'application/grpc' });
    expect(connection.streamCount).toBe(0);
  });

  it('never sends beyond the stream and connection windows, and sends the rest as they grow', async () => {
    const { connection, server } = await connected([[SETTINGS_INITIAL_WINDOW_SIZE, 100]]);
    const calls = recorder();
    connection.request('/p', [], calls.events, [Buffer.alloc(70_000, 7)], true);
    await server.roundTrip();
    expect(server.dataBytes(1)).toBe(100);
    // The stream may take more than the connection has: the connection's 65,535 bound it.
    await server.roundTrip(windowUpdateFrame(1, 100_000));
    expect(server.dataBytes(1)).toBe(65_535);
    for (const f of server.frames.filter((x) => x.type === FRAME_DATA)) {
      expect(f.payload.length).toBeLessThanOrEqual(16_384);
      expect(f.flags & FLAG_END_STREAM).toBe(0);
    }
    await server.roundTrip(windowUpdateFrame(0, 10_000));
    expect(server.dataBytes(1)).toBe(70_000);
    expect(server.frames.filter((x) => x.type === FRAME_DATA).at(-1)!.flags).toBe(FLAG_END_STREAM);
  });

  it('applies a change of the initial window to the streams already open', async () => {
    const { connection, server } = await connected([[SETTINGS_INITIAL_WINDOW_SIZE, 10]]);
    const calls = recorder();
    connection.request('/p', [], calls.events, [Buffer.alloc(50, 7)], true);
    await server.roundTrip();
    expect(server.dataBytes(1)).toBe(10);
    await server.roundTrip(settingsFrame([[SETTINGS_INITIAL_WINDOW_SIZE, 30]]));
    expect(server.dataBytes(1)).toBe(30);
  });

  it('gives a stream its window back once half is read, not while it is paused', async () => {
    const { connection, server } = await connected();
    const calls = recorder();
    const stream = connection.request('/p', [], calls.events, [], false);
    stream.pause();
    const half = STREAM_WINDOW / 2;
    const chunks = Array.from({ length: half / 16_384 }, () => dataFrame(1, 16_384));
    await server.roundTrip(headersFrame(1, OK_HEADERS), ...chunks);
    expect(calls.data).toBe(0);
    expect(server.frames.some((f) => f.type === FRAME_WINDOW_UPDATE && f.streamId === 1)).toBe(
      false,
    );
    const from = server.frames.length;
    stream.resume();
    expect(calls.data).toBe(half);
    const update = await server.next(
      (f) => f.type === FRAME_WINDOW_UPDATE && f.streamId === 1,
      from,
    );
    expect(update.payload.readUInt32BE(0)).toBe(half);
  });

  it('gives the connection window back once half of it was received', async () => {
    const { connection, server } = await connected();
    const calls = recorder();
    connection.request('/p', [], calls.events, [], false);
    const frames = Array.from({ length: CONNECTION_WINDOW / 2 / 16_384 }, () =>
      dataFrame(1, 16_384),
    );
    await server.roundTrip(headersFrame(1, OK_HEADERS), ...frames);
    const updates = server.frames.filter((f) => f.type === FRAME_WINDOW_UPDATE && f.streamId === 0);
    // The first one is the client's at the start, raising the connection window.
    expect(updates.map((f) => f.payload.readUInt32BE(0))).toEqual([
      CONNECTION_WINDOW - 65_535,
      CONNECTION_WINDOW / 2,
    ]);
    expect(calls.data).toBe(CONNECTION_WINDOW / 2);
  });

  it('queues streams beyond the server concurrency limit and opens them as others close', async () => {
    const { connection, server } = await connected([[SETTINGS_MAX_CONCURRENT_STREAMS, 1]]);
    const first = recorder();
    const second = recorder();
    connection.request('/p', [], first.events, [Buffer.from('a')], true);
    const waiting = connection.request('/p', [], second.events, [Buffer.from('b')], true);
    await server.roundTrip();
    expect(waiting.opened).toBe(false);
    expect(server.frames.filter((f) => f.type === FRAME_HEADERS).map((f) => f.streamId)).toEqual([
      1,
    ]);
    await server.roundTrip(headersFrame(1, [...OK_HEADERS, ['grpc-status', '0']], true));
    expect(first.seen).toEqual(['trailers', 'end']);
    expect(waiting.opened).toBe(true);
    expect(waiting.id).toBe(3);
    expect(server.dataBytes(3)).toBe(1);
  });

  it('on GOAWAY refuses the streams above the last stream id, finishes the others, then closes', async () => {
    const { connection, server, log, closed } = await connected();
    const kept = recorder();
    const refused = recorder();
    connection.request('/p', [], kept.events, [Buffer.from('a')], true);
    connection.request('/p', [], refused.events, [Buffer.from('b')], true);
    await server.roundTrip(goawayFrame(1, 0));
    expect(log).toEqual(['goaway 0 1']);
    expect(refused.seen).toEqual([`reset ${REFUSED_STREAM}`]);
    expect(kept.seen).toEqual([]);
    expect(() => connection.request('/p', [], recorder().events, [], true)).toThrow(
      'the connection takes no new streams',
    );
    server.send(headersFrame(1, [...OK_HEADERS, ['grpc-status', '0']], true));
    await closed;
    expect(kept.seen).toEqual(['trailers', 'end']);
    expect(log).toEqual(['goaway 0 1', 'close']);
  });

  it('drops every stream on a GOAWAY with an error code, and queued ones as unsent', async () => {
    const { connection, server, log, closed } = await connected([
      [SETTINGS_MAX_CONCURRENT_STREAMS, 1],
    ]);
    const open = recorder();
    const queued = recorder();
    connection.request('/p', [], open.events, [], false);
    connection.request('/p', [], queued.events, [], false);
    server.send(goawayFrame(1, 2));
    await closed;
    expect(open.seen).toEqual(['dropped: Session closed with error code 2']);
    expect(queued.seen).toEqual(['dropped unsent: the server sent GOAWAY with code 2']);
    expect(log).toEqual(['goaway 2 1', 'close: Session closed with error code 2']);
    expect(connection.destroyed).toBe(true);
  });

  it('reports a server RST_STREAM with its code, and cancel() resets with CANCEL', async () => {
    const { connection, server } = await connected();
    const reset = recorder();
    const cancelled = recorder();
    connection.request('/p', [], reset.events, [], false);
    const mine = connection.request('/p', [], cancelled.events, [], false);
    await server.roundTrip(rstStreamFrame(1, REFUSED_STREAM));
    expect(reset.seen).toEqual([`reset ${REFUSED_STREAM}`]);
    const from = server.frames.length;
    mine.cancel();
    const rst = await server.next((f) => f.type === FRAME_RST_STREAM, from);
    expect(rst.streamId).toBe(3);
    expect(rst.payload.readUInt32BE(0)).toBe(CANCEL);
    // Frames the server sent before it saw the reset are read and ignored.
    await server.roundTrip(headersFrame(3, OK_HEADERS), dataFrame(3, 5));
    expect(cancelled.seen).toEqual([]);
    expect(connection.streamCount).toBe(0);
  });

  it('reassembles a header block from HEADERS and CONTINUATION frames', async () => {
    const { connection, server } = await connected();
    const calls = recorder();
    connection.request('/p', [], calls.events, [], true);
    const block = literal([...OK_HEADERS, ['grpc-status', '5'], ['grpc-message', 'x'.repeat(40)]]);
    await server.roundTrip(
      frameOf(FRAME_HEADERS, FLAG_END_STREAM, 1, block.subarray(0, 10)),
      frameOf(FRAME_CONTINUATION, 0, 1, block.subarray(10, 30)),
      frameOf(FRAME_CONTINUATION, FLAG_END_HEADERS, 1, block.subarray(30)),
    );
    expect(calls.seen).toEqual(['trailers', 'end']);
    expect(calls.headers[0]).toEqual({
      ':status': 200,
      'content-type': 'application/grpc',
      'grpc-status': '5',
      'grpc-message': 'x'.repeat(40),
    });
  });

  it('ends the connection with GOAWAY PROTOCOL_ERROR when a header block is interrupted', async () => {
    const { connection, server, log } = await connected();
    const calls = recorder();
    connection.request('/p', [], calls.events, [], true);
    const block = literal(OK_HEADERS);
    server.send(
      frameOf(FRAME_HEADERS, 0, 1, block.subarray(0, 5)),
      frameOf(FRAME_PING, 0, 0, Buffer.alloc(8)),
    );
    const goaway = await server.next((f) => f.type === FRAME_GOAWAY);
    expect(goaway.payload.readUInt32BE(4)).toBe(1);
    expect(calls.seen).toEqual(['dropped: HTTP/2 protocol error: a header block was interrupted']);
    expect(log).toEqual(['close: HTTP/2 protocol error: a header block was interrupted']);
  });

  it('ends the connection with GOAWAY COMPRESSION_ERROR on a block that is not valid HPACK', async () => {
    const { connection, server } = await connected();
    connection.request('/p', [], recorder().events, [], true);
    // Index 70: nothing is in the dynamic table.
    server.send(frameOf(FRAME_HEADERS, FLAG_END_HEADERS, 1, Buffer.from([0xc6])));
    const goaway = await server.next((f) => f.type === FRAME_GOAWAY);
    expect(goaway.payload.readUInt32BE(4)).toBe(9);
    expect(connection.destroyed).toBe(true);
  });

  it('answers a PING with the same payload, and has its own pings answered', async () => {
    const { connection, server } = await connected();
    const from = server.frames.length;
    server.send(frameOf(FRAME_PING, 0, 0, Buffer.from('12345678')));
    const ack = await server.next((f) => f.type === FRAME_PING && f.flags === FLAG_ACK, from);
    expect(ack.payload.toString()).toBe('12345678');
    const answered = new Promise<Error | null>((resolve) => connection.ping(resolve));
    const ping = await server.next((f) => f.type === FRAME_PING && f.flags === 0);
    server.send(frameOf(FRAME_PING, FLAG_ACK, 0, ping.payload));
    expect(await answered).toBeNull();
  });

  it('answers a PING read with a response in the same socket write as the request that response starts', async () => {
    const sockets = await tcpPair();
    const [clientSide, serverSide] = sockets;
    try {
      const { connection, server } = await connected([], sockets);
      let writes = 0;
      const write = clientSide.write.bind(clientSide) as (chunk: Buffer) => boolean;
      clientSide.write = ((chunk: Buffer) => {
        writes++;
        return write(chunk);
      }) as typeof clientSide.write;
      const next = recorder();
      let first = true;
      const events: H2StreamEvents = {
        ...recorder().events,
        // As a caller awaiting the answer does: the next call starts in a microtask after it.
        onEnd: () => {
          if (!first) return;
          first = false;
          void Promise.resolve().then(() =>
            connection.request('/p', [], next.events, [Buffer.from('second')], true),
          );
        },
      };
      connection.request('/p', [], events, [Buffer.from('first')], true);
      await server.next((f) => f.type === FRAME_DATA && f.streamId === 1);
      expect(writes).toBe(1);
      const from = server.frames.length;
      server.send(
        frameOf(FRAME_PING, 0, 0, Buffer.from('bdp-ping')),
        headersFrame(1, OK_HEADERS),
        dataFrame(1, 10),
        headersFrame(1, [['grpc-status', '0']], true),
      );
      await server.next((f) => f.type === FRAME_DATA && f.streamId === 3, from);
      expect(writes).toBe(2);
      expect(server.frames.slice(from).map((f) => [f.type, f.flags, f.streamId])).toEqual([
        [FRAME_PING, FLAG_ACK, 0],
        [FRAME_HEADERS, FLAG_END_HEADERS, 3],
        [FRAME_DATA, FLAG_END_STREAM, 3],
      ]);
      expect(server.frames[from]!.payload.toString()).toBe('bdp-ping');
    } finally {
      clientSide.destroy();
      serverSide.destroy();
    }
  });

  it('drops open streams and fails pings when the socket closes', async () => {
    const { connection, server, log, closed } = await connected();
    const calls = recorder();
    connection.request('/p', [], calls.events, [], false);
    const answered = new Promise<Error | null>((resolve) => connection.ping(resolve));
    await server.roundTrip();
    server.socket.end();
    await closed;
    expect((await answered)?.message).toBe('the connection closed');
    expect(calls.seen).toEqual(['dropped: the connection closed']);
    expect(log).toEqual(['close: the connection closed']);
  });
});
