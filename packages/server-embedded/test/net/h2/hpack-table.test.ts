// The shared response blocks (headers, OK trailers) put in the peer's HPACK dynamic table once per
// connection and sent as indexes after, as grpc-go does: exact octets in socket order, decoded by
// our client's decoder and by node:http2 (nghttp2) and grpc-js, under the peer's table size.
import { connect, constants, type IncomingHttpHeaders } from 'node:http2';
import {
  FLAG_ACK,
  FLAG_END_HEADERS,
  FLAG_END_STREAM,
  FRAME_DATA,
  FRAME_HEADERS,
  FRAME_SETTINGS,
  frameOf,
  HeaderBlockDecoder,
  PREFACE,
  SETTINGS_HEADER_TABLE_SIZE,
  SETTINGS_INITIAL_WINDOW_SIZE,
  settingsFrame,
  windowUpdateFrame,
} from '@etcdkit/client/h2';
import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import {
  encodeResponseBlock,
  OK_TRAILERS,
  RESPONSE_HEADERS,
  ResponseBlockEncoder,
  SHARED_TABLE_BYTES,
} from '../../../src/net/h2/response-headers.js';
import { rawConnect, requestBlock as request } from './raw-socket.js';
import { grpcFrame, startToy, until } from './toy-service.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

const HEADERS: [string, string][] = [
  [':status', '200'],
  ['content-type', 'application/grpc+proto'],
  ['grpc-accept-encoding', 'identity,deflate,gzip'],
  ['grpc-encoding', 'identity'],
];
const TRAILERS: [string, string][] = [
  ['grpc-status', '0'],
  ['grpc-message', 'OK'],
];

/** An HPACK string literal, not Huffman-coded. */
const str = (text: string): number[] => [text.length, ...Buffer.from(text, 'latin1')];

/** The first blocks on a connection: literals with incremental indexing (RFC 7541, 6.2.1). */
const INDEXING_HEADERS = Buffer.from([
  0x88,
  0x5f, // content-type, static name 31, 6-bit prefix
  ...str('application/grpc+proto'),
  0x40,
  ...str('grpc-accept-encoding'),
  ...str('identity,deflate,gzip'),
  0x40,
  ...str('grpc-encoding'),
  ...str('identity'),
]);
const INDEXING_TRAILERS = Buffer.from([
  0x40,
  ...str('grpc-status'),
  ...str('0'),
  0x40,
  ...str('grpc-message'),
  ...str('OK'),
]);
/** After them: content-type was added first (index 66 once all five are in), grpc-message last (62). */
const INDEXED_HEADERS = Buffer.from([0x88, 0x80 | 66, 0x80 | 65, 0x80 | 64]);
const INDEXED_TRAILERS = Buffer.from([0x80 | 63, 0x80 | 62]);
/** The same fields as literals without indexing, valid in any table state. */
const LITERAL_HEADERS = encodeResponseBlock(200, [
  [31, 'application/grpc+proto'],
  ['grpc-accept-encoding', 'identity,deflate,gzip'],
  ['grpc-encoding', 'identity'],
]);
const LITERAL_TRAILERS = encodeResponseBlock(undefined, TRAILERS);

const pairs = (fields: { name: string; value: string }[]) => fields.map((f) => [f.name, f.value]);

const UNARY = request('/toy.Echo/Unary');

/** A unary echo of `size` octets on `streamId`, as frames. */
function unaryFrames(streamId: number, size: number): Buffer {
  return Buffer.concat([
    frameOf(FRAME_HEADERS, FLAG_END_HEADERS, streamId, UNARY),
    frameOf(FRAME_DATA, FLAG_END_STREAM, streamId, grpcFrame(Buffer.alloc(size, 0x61))),
  ]);
}

/** The literal blocks expected for `frames` in socket order, the first opening with `update`. */
function literalsAfter(update: Buffer, frames: { flags: number }[]): Buffer[] {
  return frames.map((f, i) => {
    const block = f.flags & FLAG_END_STREAM ? LITERAL_TRAILERS : LITERAL_HEADERS;
    return i === 0 ? Buffer.concat([update, block]) : block;
  });
}

async function rawToy() {
  const toy = await startToy();
  cleanups.push(toy.stop);
  const raw = await rawConnect(toy.port);
  cleanups.push(() => raw.socket.destroy());
  const headerFrames = () => raw.frames.filter((f) => f.type === FRAME_HEADERS);
  const ended = (streamId: number) =>
    headerFrames().some((f) => f.streamId === streamId && f.flags & FLAG_END_STREAM);
  return { ...raw, headerFrames, ended };
}

describe('ResponseBlockEncoder', () => {
  it('indexes the shared fields once, then sends indexes; other blocks stay as given', () => {
    const encoder = new ResponseBlockEncoder();
    expect(encoder.encode(RESPONSE_HEADERS)).toEqual(INDEXING_HEADERS);
    // Before the trailers are in, the headers' indexes count from 62.
    expect(encoder.encode(RESPONSE_HEADERS)).toEqual(Buffer.from([0x88, 0xc0, 0xbf, 0xbe]));
    expect(encoder.encode(OK_TRAILERS)).toEqual(INDEXING_TRAILERS);
    expect(encoder.encode(RESPONSE_HEADERS)).toEqual(INDEXED_HEADERS);
    expect(encoder.encode(OK_TRAILERS)).toEqual(INDEXED_TRAILERS);
    const other = encodeResponseBlock(200, [['grpc-status', '5']]);
    expect(encoder.encode(other)).toBe(other);
    expect(SHARED_TABLE_BYTES).toBe(66 + 73 + 53 + 44 + 46);
  });

  it('signals a lowered table size first; keeps the entries that still fit', () => {
    const encoder = new ResponseBlockEncoder();
    encoder.encode(RESPONSE_HEADERS);
    encoder.encode(OK_TRAILERS);
    encoder.peerTableSize(1000);
    // 1000 with a 5-bit prefix: 31, then 969 = 73 + 7 * 128.
    expect(encoder.encode(OK_TRAILERS)).toEqual(Buffer.from([0x3f, 0xc9, 0x07, 0xbf, 0xbe]));
    expect(encoder.encode(OK_TRAILERS)).toEqual(INDEXED_TRAILERS);
    encoder.peerTableSize(SHARED_TABLE_BYTES - 1);
    const other = encodeResponseBlock(undefined, [['grpc-status', '5']]);
    expect(encoder.encode(other)).toEqual(Buffer.concat([Buffer.from([0x3f, 0xfa, 0x01]), other]));
    expect(encoder.encode(RESPONSE_HEADERS)).toEqual(LITERAL_HEADERS);
    expect(encoder.encode(OK_TRAILERS)).toEqual(LITERAL_TRAILERS);
    // A raised size is not used: still literals, no size update.
    encoder.peerTableSize(4096);
    expect(encoder.encode(RESPONSE_HEADERS)).toEqual(LITERAL_HEADERS);
  });
});

describe('H2GrpcServer header blocks on one connection', () => {
  it('sends the shared fields as indexes from the second call on, decoded alike', async () => {
    const { socket, headerFrames, ended } = await rawToy();
    socket.write(Buffer.concat([PREFACE, settingsFrame([]), unaryFrames(1, 3)]));
    await until(() => ended(1));
    socket.write(unaryFrames(3, 3));
    await until(() => ended(3));
    const blocks = headerFrames().map((f) => f.payload);
    expect(blocks).toEqual([
      INDEXING_HEADERS,
      INDEXING_TRAILERS,
      INDEXED_HEADERS,
      INDEXED_TRAILERS,
    ]);
    const decoder = new HeaderBlockDecoder();
    expect(blocks.map((block) => pairs(decoder.decode(block)))).toEqual([
      HEADERS,
      TRAILERS,
      HEADERS,
      TRAILERS,
    ]);
  });

  it('encodes trailers held behind flow control when they go out, after later streams', async () => {
    const { socket, frames, headerFrames, ended } = await rawToy();
    // Stream 1's 45-octet answer waits for a window of 10; stream 3's 5 octets go out whole.
    socket.write(
      Buffer.concat([
        PREFACE,
        settingsFrame([[SETTINGS_INITIAL_WINDOW_SIZE, 10]]),
        unaryFrames(1, 40),
        unaryFrames(3, 0),
      ]),
    );
    await until(() => ended(3));
    socket.write(windowUpdateFrame(1, 100));
    await until(() => ended(1));
    const decoder = new HeaderBlockDecoder();
    const seen = headerFrames().map((f) => [
      f.streamId,
      f.payload,
      pairs(decoder.decode(f.payload)),
    ]);
    expect(seen).toEqual([
      [1, INDEXING_HEADERS, HEADERS],
      [3, Buffer.from([0x88, 0xc0, 0xbf, 0xbe]), HEADERS],
      [3, INDEXING_TRAILERS, TRAILERS],
      [1, INDEXED_TRAILERS, TRAILERS],
    ]);
    const data = frames.filter((f) => f.type === FRAME_DATA && f.streamId === 1);
    expect(data.map((f) => f.payload.length)).toEqual([10, 35]);
  });

  it('sends only literals to a peer whose table size is 0, after signalling it', async () => {
    const { socket, headerFrames, ended } = await rawToy();
    socket.write(
      Buffer.concat([
        PREFACE,
        settingsFrame([[SETTINGS_HEADER_TABLE_SIZE, 0]]),
        unaryFrames(1, 3),
        unaryFrames(3, 3),
      ]),
    );
    await until(() => ended(1) && ended(3));
    // The calls' blocks may interleave; the first on the socket carries the size update.
    const blocks = headerFrames().map((f) => f.payload);
    expect(blocks).toEqual(literalsAfter(Buffer.from([0x20]), headerFrames()));
    const decoder = new HeaderBlockDecoder(0);
    expect(blocks.map((block) => pairs(decoder.decode(block)))).toEqual(
      headerFrames().map((f) => (f.flags & FLAG_END_STREAM ? TRAILERS : HEADERS)),
    );
  });

  it('answers a table size lowered mid-connection with a size update, then literals', async () => {
    const { socket, frames, headerFrames, ended } = await rawToy();
    socket.write(Buffer.concat([PREFACE, settingsFrame([]), unaryFrames(1, 3)]));
    await until(() => ended(1));
    const acks = () => frames.filter((f) => f.type === FRAME_SETTINGS && f.flags & FLAG_ACK);
    socket.write(settingsFrame([[SETTINGS_HEADER_TABLE_SIZE, 100]]));
    await until(() => acks().length === 2);
    socket.write(Buffer.concat([unaryFrames(3, 3), unaryFrames(5, 3)]));
    await until(() => ended(3) && ended(5));
    const blocks = headerFrames().map((f) => f.payload);
    expect(blocks.slice(0, 2)).toEqual([INDEXING_HEADERS, INDEXING_TRAILERS]);
    expect(blocks.slice(2)).toEqual(
      literalsAfter(Buffer.from([0x3f, 100 - 31]), headerFrames().slice(2)),
    );
    const decoder = new HeaderBlockDecoder();
    expect(blocks.map((block) => pairs(decoder.decode(block)))).toEqual(
      headerFrames().map((f) => (f.flags & FLAG_END_STREAM ? TRAILERS : HEADERS)),
    );
  });
});

describe('H2GrpcServer indexed blocks reached by other decoders', () => {
  /** Unary echoes one after another on one node:http2 session: their headers and trailers. */
  async function nodeCalls(settings: { headerTableSize?: number }, lowerTo?: number) {
    const toy = await startToy();
    cleanups.push(toy.stop);
    const session = connect(`http://${toy.target}`, { settings });
    cleanups.push(() => session.destroy());
    const answers: { headers: IncomingHttpHeaders; trailers: IncomingHttpHeaders; rst: number }[] =
      [];
    for (let i = 0; i < 3; i++) {
      if (i === 2 && lowerTo !== undefined) {
        await new Promise<void>((resolve) =>
          session.settings({ headerTableSize: lowerTo }, () => resolve()),
        );
      }
      answers.push(
        await new Promise((resolve, reject) => {
          const stream = session.request({
            ':method': 'POST',
            ':path': '/toy.Echo/Unary',
            'content-type': 'application/grpc',
            te: 'trailers',
          });
          let headers: IncomingHttpHeaders = {};
          let trailers: IncomingHttpHeaders = {};
          stream.on('response', (h) => {
            headers = h;
          });
          stream.on('trailers', (t) => {
            trailers = t;
          });
          stream.on('data', () => {});
          stream.on('error', reject);
          stream.on('close', () => resolve({ headers, trailers, rst: stream.rstCode ?? 0 }));
          stream.end(grpcFrame(Buffer.from(`call ${i}`)));
        }),
      );
    }
    return answers;
  }

  const expected = {
    headers: {
      ':status': 200,
      'content-type': 'application/grpc+proto',
      'grpc-accept-encoding': 'identity,deflate,gzip',
      'grpc-encoding': 'identity',
    },
    trailers: { 'grpc-status': '0', 'grpc-message': 'OK' },
    rst: constants.NGHTTP2_NO_ERROR,
  };

  it.each([
    ['the default table', {}, undefined],
    ['a table of 0', { headerTableSize: 0 }, undefined],
    ['a table lowered to 64 between calls', {}, 64],
  ])('node:http2 decodes every call alike with %s', async (_, settings, lowerTo) => {
    const answers = await nodeCalls(settings, lowerTo);
    for (const answer of answers) expect(answer).toMatchObject(expected);
  });

  it('grpc-js decodes every call alike, concurrent ones too', async () => {
    const toy = await startToy();
    cleanups.push(toy.stop);
    const client = new grpc.Client(toy.target, grpc.credentials.createInsecure());
    cleanups.push(() => client.close());
    const raw = (bytes: Buffer): Buffer => bytes;
    const unary = (text: string) =>
      new Promise<string>((resolve, reject) =>
        client.makeUnaryRequest(
          '/toy.Echo/Unary',
          raw,
          raw,
          Buffer.from(text),
          (error, response) => (error ? reject(error) : resolve(String(response))),
        ),
      );
    expect(await unary('first')).toBe('first');
    expect(await unary('second')).toBe('second');
    const many = Array.from({ length: 20 }, (_, i) => `call ${i}`);
    expect(await Promise.all(many.map(unary))).toEqual(many);
  });
});
