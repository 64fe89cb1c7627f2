// The server's own HTTP/2 connection driven frame by frame over a raw socket: the preface,
// SETTINGS and PING, padding and CONTINUATION, and connection errors answered with GOAWAY.
import {
  encodeLiterals,
  FLAG_ACK,
  FLAG_END_HEADERS,
  FLAG_END_STREAM,
  FLAG_PADDED,
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
  PROTOCOL_ERROR,
  SETTINGS_INITIAL_WINDOW_SIZE,
  settingsFrame,
  windowUpdateFrame,
} from '@etcdkit/client/h2';
import { afterEach, describe, expect, it } from 'vitest';
import { rawConnect, requestBlock as request } from './raw-socket.js';
import { grpcFrame, grpcMessages, release, startToy, until } from './toy-service.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** A raw socket to the toy service, and the frames it received so far. */
async function open(options: Parameters<typeof startToy>[0] = {}) {
  const toy = await startToy(options);
  cleanups.push(toy.stop);
  const raw = await rawConnect(toy.port);
  cleanups.push(() => raw.socket.destroy());
  return { toy, ...raw };
}

const REQUEST = request('/toy.Echo/Unary');

/** `body` as DATA frames on `streamId` of at most 16,384 octets each. */
function dataFrames(streamId: number, body: Buffer, flags = 0): Buffer[] {
  const frames: Buffer[] = [];
  for (let offset = 0; offset < body.length; offset += 16_384) {
    const end = Math.min(offset + 16_384, body.length);
    frames.push(
      frameOf(FRAME_DATA, end === body.length ? flags : 0, streamId, body.subarray(offset, end)),
    );
  }
  return frames;
}

describe('H2ServerConnection on a raw socket', () => {
  it('closes the socket on a malformed preface, with GOAWAY PROTOCOL_ERROR', async () => {
    const { socket, frames, isClosed } = await open();
    socket.write('GET / HTTP/1.1\r\nHost: x\r\n\r\n');
    await until(isClosed);
    const goaway = frames.find((f) => f.type === FRAME_GOAWAY);
    expect(goaway?.payload.readUInt32BE(4)).toBe(PROTOCOL_ERROR);
  });

  it("sends SETTINGS, ACKs the client's and answers PING", async () => {
    const { socket, frames } = await open();
    socket.write(
      Buffer.concat([
        PREFACE,
        settingsFrame([]),
        frameOf(FRAME_PING, 0, 0, Buffer.from('12345678')),
      ]),
    );
    await until(() => frames.some((f) => f.type === FRAME_PING));
    expect(frames[0]).toMatchObject({ type: FRAME_SETTINGS, flags: 0 });
    expect(frames.some((f) => f.type === FRAME_SETTINGS && f.flags === FLAG_ACK)).toBe(true);
    const pong = frames.find((f) => f.type === FRAME_PING)!;
    expect(pong.flags).toBe(FLAG_ACK);
    expect(pong.payload.toString()).toBe('12345678');
  });

  it('reads a padded HEADERS with CONTINUATION and padded DATA', async () => {
    const { socket, frames } = await open();
    const half = Math.floor(REQUEST.length / 2);
    const padded = Buffer.concat([Buffer.from([3]), REQUEST.subarray(0, half), Buffer.alloc(3)]);
    const body = grpcFrame(Buffer.from('padded'));
    const data = Buffer.concat([Buffer.from([5]), body, Buffer.alloc(5)]);
    socket.write(
      Buffer.concat([
        PREFACE,
        settingsFrame([]),
        frameOf(FRAME_HEADERS, FLAG_PADDED, 1, padded),
        frameOf(FRAME_CONTINUATION, FLAG_END_HEADERS, 1, REQUEST.subarray(half)),
        frameOf(FRAME_DATA, FLAG_PADDED | FLAG_END_STREAM, 1, data),
      ]),
    );
    await until(() => frames.some((f) => f.type === FRAME_HEADERS && f.flags & FLAG_END_STREAM));
    const decoder = new HeaderBlockDecoder();
    const blocks = frames
      .filter((f) => f.type === FRAME_HEADERS)
      .map((f) => decoder.decode(f.payload));
    expect(blocks[0]!.map((f) => [f.name, f.value])).toEqual([
      [':status', '200'],
      ['content-type', 'application/grpc+proto'],
      ['grpc-accept-encoding', 'identity,deflate,gzip'],
      ['grpc-encoding', 'identity'],
    ]);
    expect(blocks[1]!.map((f) => [f.name, f.value])).toEqual([
      ['grpc-status', '0'],
      ['grpc-message', 'OK'],
    ]);
    const payload = Buffer.concat(
      frames.filter((f) => f.type === FRAME_DATA).map((f) => f.payload),
    );
    expect(grpcMessages(payload).map(String)).toEqual(['padded']);
  });

  it('answers a frame interrupting a header block with GOAWAY PROTOCOL_ERROR', async () => {
    const { socket, frames, isClosed } = await open();
    socket.write(
      Buffer.concat([
        PREFACE,
        settingsFrame([]),
        frameOf(FRAME_HEADERS, 0, 1, REQUEST.subarray(0, 4)),
        frameOf(FRAME_PING, 0, 0, Buffer.alloc(8)),
      ]),
    );
    await until(isClosed);
    const goaway = frames.find((f) => f.type === FRAME_GOAWAY);
    expect(goaway?.payload.readUInt32BE(4)).toBe(PROTOCOL_ERROR);
  });

  it("sends no more DATA than the peer's stream window, and the rest after WINDOW_UPDATE", async () => {
    const { socket, frames } = await open();
    const body = grpcFrame(Buffer.alloc(40, 0x61));
    socket.write(
      Buffer.concat([
        PREFACE,
        settingsFrame([[SETTINGS_INITIAL_WINDOW_SIZE, 10]]),
        frameOf(FRAME_HEADERS, FLAG_END_HEADERS, 1, REQUEST),
        frameOf(FRAME_DATA, FLAG_END_STREAM, 1, body),
      ]),
    );
    await until(() => frames.some((f) => f.type === FRAME_DATA));
    await new Promise((resolve) => setTimeout(resolve, 50));
    const sizes = () => frames.filter((f) => f.type === FRAME_DATA).map((f) => f.payload.length);
    expect(sizes()).toEqual([10]);
    expect(frames.filter((f) => f.type === FRAME_HEADERS)).toHaveLength(1);
    socket.write(windowUpdateFrame(1, 100));
    await until(() => frames.filter((f) => f.type === FRAME_HEADERS).length === 2);
    expect(sizes()).toEqual([10, 35]);
    const last = frames.filter((f) => f.type === FRAME_HEADERS)[1]!;
    expect(last.flags & FLAG_END_STREAM).toBe(FLAG_END_STREAM);
    // The request's 45 octets were under half of the default window: no WINDOW_UPDATE for them.
    expect(frames.some((f) => f.type === FRAME_WINDOW_UPDATE)).toBe(false);
  });

  it("ends the connection after the client's GOAWAY once no stream is open", async () => {
    const { socket, isClosed } = await open();
    socket.write(Buffer.concat([PREFACE, settingsFrame([]), goawayFrame(0, 0)]));
    await until(isClosed);
  });

  it('answers DATA beyond the stream window with RST_STREAM FLOW_CONTROL_ERROR', async () => {
    // The server announces 1,000-octet stream windows; the client sends 2,000 octets after its ACK.
    const { socket, frames } = await open({ streamWindow: 1000 });
    socket.write(
      Buffer.concat([
        PREFACE,
        settingsFrame([]),
        // The window is in force once acknowledged.
        frameOf(FRAME_SETTINGS, FLAG_ACK, 0, Buffer.alloc(0)),
        frameOf(FRAME_HEADERS, FLAG_END_HEADERS, 1, REQUEST),
        frameOf(FRAME_DATA, 0, 1, Buffer.alloc(2000)),
      ]),
    );
    await until(() => frames.some((f) => f.type === FRAME_RST_STREAM));
    const settings = frames.find((f) => f.type === FRAME_SETTINGS && f.flags === 0)!;
    expect(settings.payload.length).toBe(6);
    expect(settings.payload.readUInt16BE(0)).toBe(SETTINGS_INITIAL_WINDOW_SIZE);
    expect(settings.payload.readUInt32BE(2)).toBe(1000);
    const reset = frames.find((f) => f.type === FRAME_RST_STREAM)!;
    expect(reset.streamId).toBe(1);
    expect(reset.payload.readUInt32BE(0)).toBe(0x3);
  });

  it('refuses a stream opened after its GOAWAY and still finishes the open one', async () => {
    const { toy, socket, frames, isClosed } = await open();
    const hold = encodeLiterals(
      [
        [':method', 'POST'],
        [':scheme', 'http'],
        [':path', '/toy.Echo/Hold'],
        [':authority', 'localhost'],
        ['content-type', 'application/grpc'],
      ].map(([name, value]) => ({ name: name!, value: value!, sensitive: false })),
    );
    const body = grpcFrame(Buffer.from('x'));
    socket.write(
      Buffer.concat([
        PREFACE,
        settingsFrame([]),
        frameOf(FRAME_HEADERS, FLAG_END_HEADERS, 1, hold),
        frameOf(FRAME_DATA, FLAG_END_STREAM, 1, body),
      ]),
    );
    await until(() => toy.seen.held.length === 1);
    const closing = toy.server.close();
    await until(() => frames.some((f) => f.type === FRAME_GOAWAY));
    expect(frames.find((f) => f.type === FRAME_GOAWAY)!.payload.readUInt32BE(0)).toBe(1);
    // A stream the client opened before it saw the GOAWAY.
    socket.write(
      Buffer.concat([
        frameOf(FRAME_HEADERS, FLAG_END_HEADERS, 3, REQUEST),
        frameOf(FRAME_DATA, FLAG_END_STREAM, 3, body),
      ]),
    );
    await until(() => frames.some((f) => f.type === FRAME_RST_STREAM && f.streamId === 3));
    const refused = frames.find((f) => f.type === FRAME_RST_STREAM && f.streamId === 3)!;
    expect(refused.payload.readUInt32BE(0)).toBe(0x7);
    release(toy.seen.held[0]!);
    await until(isClosed);
    await closing;
    expect(frames.filter((f) => f.type === FRAME_GOAWAY)).toHaveLength(1);
    const data = frames.filter((f) => f.type === FRAME_DATA && f.streamId === 1);
    expect(grpcMessages(Buffer.concat(data.map((f) => f.payload))).map(String)).toEqual([
      'released',
    ]);
  });

  it("withholds a paused call's stream window, not the connection's, until it resumes", async () => {
    const { toy, socket, frames } = await open();
    // Five messages of 13,107 octets with their prefixes: the whole default stream window.
    const messages = Array.from({ length: 5 }, (_, i) => Buffer.alloc(13_102, 0x61 + i));
    const body = Buffer.concat(messages.map(grpcFrame));
    expect(body.length).toBe(65_535);
    socket.write(
      Buffer.concat([
        PREFACE,
        settingsFrame([]),
        frameOf(FRAME_SETTINGS, FLAG_ACK, 0, Buffer.alloc(0)),
        frameOf(FRAME_HEADERS, FLAG_END_HEADERS, 1, request('/toy.Echo/Paused')),
        ...dataFrames(1, body),
        // Another stream on the same connection is served meanwhile.
        frameOf(FRAME_HEADERS, FLAG_END_HEADERS, 3, REQUEST),
        frameOf(FRAME_DATA, FLAG_END_STREAM, 3, grpcFrame(Buffer.from('other'))),
      ]),
    );
    const ended = (id: number) =>
      frames.some(
        (f) => f.type === FRAME_HEADERS && f.streamId === id && f.flags & FLAG_END_STREAM,
      );
    await until(() => ended(3));
    await new Promise((resolve) => setTimeout(resolve, 50));
    const updates = (id: number) =>
      frames
        .filter((f) => f.type === FRAME_WINDOW_UPDATE && f.streamId === id)
        .map((f) => f.payload.readUInt32BE(0));
    const other = frames.filter((f) => f.type === FRAME_DATA && f.streamId === 3);
    expect(grpcMessages(Buffer.concat(other.map((f) => f.payload))).map(String)).toEqual(['other']);
    // The connection window is given back per half window: after stream 1's first two frames,
    // then once stream 3's 10 octets bring the rest (32,767) past half.
    expect(updates(0)).toEqual([32_768, 32_777]);
    expect(updates(1)).toEqual([]);
    expect(toy.seen.paused).toHaveLength(1);
    expect(toy.seen.delivered).toEqual([]);

    toy.seen.paused[0]!.resume();
    await until(() => updates(1).length === 1);
    expect(updates(1)).toEqual([65_535]);
    expect(toy.seen.delivered).toEqual(messages);
    socket.write(frameOf(FRAME_DATA, FLAG_END_STREAM, 1, grpcFrame(Buffer.from('last'))));
    await until(() => ended(1));
    const answer = frames.filter((f) => f.type === FRAME_DATA && f.streamId === 1);
    expect(grpcMessages(Buffer.concat(answer.map((f) => f.payload))).map(String)).toEqual([
      'got 6',
    ]);
    expect(toy.seen.delivered.at(-1)?.toString()).toBe('last');
  });

  it('holds the half-close of a paused call behind its held messages', async () => {
    const { toy, socket, frames } = await open();
    socket.write(
      Buffer.concat([
        PREFACE,
        settingsFrame([]),
        frameOf(FRAME_HEADERS, FLAG_END_HEADERS, 1, request('/toy.Echo/Paused')),
        frameOf(
          FRAME_DATA,
          FLAG_END_STREAM,
          1,
          Buffer.concat([grpcFrame(Buffer.from('a')), grpcFrame(Buffer.from('b'))]),
        ),
      ]),
    );
    await until(() => toy.seen.paused.length === 1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    expect(toy.seen.paused[0]!.halfClosed).toBe(false);
    expect(frames.some((f) => f.type === FRAME_HEADERS)).toBe(false);
    toy.seen.paused[0]!.resume();
    await until(() => frames.some((f) => f.type === FRAME_HEADERS && f.flags & FLAG_END_STREAM));
    const answer = frames.filter((f) => f.type === FRAME_DATA && f.streamId === 1);
    expect(grpcMessages(Buffer.concat(answer.map((f) => f.payload))).map(String)).toEqual([
      'got 2',
    ]);
  });

  it('drops what a paused call held once it is over', async () => {
    const { toy, socket, frames } = await open();
    socket.write(
      Buffer.concat([
        PREFACE,
        settingsFrame([]),
        frameOf(FRAME_HEADERS, FLAG_END_HEADERS, 1, request('/toy.Echo/Paused')),
        frameOf(FRAME_DATA, 0, 1, grpcFrame(Buffer.from('held'))),
      ]),
    );
    await until(() => toy.seen.paused.length === 1);
    await new Promise((resolve) => setTimeout(resolve, 50));
    toy.seen.paused[0]!.end();
    toy.seen.paused[0]!.resume();
    await until(() => frames.some((f) => f.type === FRAME_HEADERS && f.flags & FLAG_END_STREAM));
    expect(toy.seen.delivered).toEqual([]);
  });
});
