// Requests with large or many header fields, sent to grpc-js's server (configured as the member
// server configures it) and to the server's own HTTP/2 layer side by side: both answer alike, by
// the limits of node:http2 under grpc-js (no header list size, 128 fields, 65,536-octet HPACK
// literals, 8 CONTINUATION frames), and neither buffers an endless header block.

import {
  COMPRESSION_ERROR,
  ENHANCE_YOUR_CALM,
  encodeLiterals,
  FLAG_END_HEADERS,
  FLAG_END_STREAM,
  FRAME_CONTINUATION,
  FRAME_DATA,
  FRAME_GOAWAY,
  FRAME_HEADERS,
  FRAME_RST_STREAM,
  frameOf,
  goawayFrame,
  HeaderBlockDecoder,
  INTERNAL_ERROR,
  PREFACE,
  rstStreamFrame,
  settingsFrame,
} from '@etcdkit/client/h2';
import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { startGrpcJsToy } from './grpc-js-toy.js';
import { type Frame, rawConnect } from './raw-socket.js';
import { grpcFrame, startToy, until } from './toy-service.js';

const raw = (bytes: Buffer): Buffer => bytes;
const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

/** Both servers, grpc-js's first. */
async function servers() {
  const grpcJs = await startGrpcJsToy();
  cleanups.push(grpcJs.stop);
  const own = await startToy();
  cleanups.push(own.stop);
  return [grpcJs, own];
}

/** A unary call with `metadata` on a new channel, then one without: what the client saw of each. */
async function callWith(target: string, metadata: grpc.Metadata): Promise<string[]> {
  const client = new grpc.Client(target, grpc.credentials.createInsecure());
  cleanups.push(() => client.close());
  const call = (md: grpc.Metadata) =>
    new Promise<string>((resolve) => {
      const deadline = Date.now() + 5000;
      client.makeUnaryRequest(
        '/toy.Echo/Unary',
        raw,
        raw,
        Buffer.from('x'),
        md,
        { deadline },
        (e) => resolve(e ? `${e.code}: ${e.details}` : 'OK'),
      );
    });
  return [await call(metadata), await call(new grpc.Metadata())];
}

/** Metadata of `count` fields `x-<i>` of `value`. */
function metadata(count: number, value: string): grpc.Metadata {
  const md = new grpc.Metadata();
  for (let i = 0; i < count; i++) md.set(`x-${i}`, value);
  return md;
}

// '#' has a 12-bit Huffman code: HPACK sends it as it is, so the literal is as long as the value.
// 'a' has a 5-bit one: Huffman makes the literal 5/8 of the value.
const RST_9 = '13: Received RST_STREAM with code 9';
const GOAWAY_2 =
  '13: Received RST_STREAM with code 2 triggered by internal client error: Session closed with error code 2';
const CALM = '8: Bandwidth exhausted or memory limit exceeded';
const CASES: [string, () => grpc.Metadata, string][] = [
  ['16 KiB', () => metadata(1, '#'.repeat(16 * 1024)), 'OK'],
  ['a 65,536-octet literal', () => metadata(1, '#'.repeat(65_536)), 'OK'],
  ['a 65,537-octet literal', () => metadata(1, '#'.repeat(65_537)), RST_9],
  ['100,000 octets in a 62,500-octet literal', () => metadata(1, 'a'.repeat(100_000)), 'OK'],
  ['1 MiB', () => metadata(1, 'a'.repeat(1024 * 1024)), RST_9],
  ['120,000 octets in 8 frames', () => metadata(3, '#'.repeat(40_000)), 'OK'],
  ['300,000 octets in 19 frames', () => metadata(5, '#'.repeat(60_000)), GOAWAY_2],
  ['100 fields', () => metadata(100, 'v'), 'OK'],
  ['124 fields and grpc-js its own', () => metadata(124, 'v'), CALM],
];

describe('header block limits, grpc-js server beside net/h2', () => {
  it.each(CASES)('a grpc-js client sending %s sees the same', async (_name, make, expected) => {
    const seen: string[][] = [];
    for (const server of await servers()) seen.push(await callWith(server.target, make()));
    // The first call as expected, and the channel serves the next one either way.
    expect(seen).toEqual([
      [expected, 'OK'],
      [expected, 'OK'],
    ]);
  });

  /** A request's header block: the toy's Unary method, then `extra` fields. */
  function block(extra: [string, string][] = []): Buffer {
    return encodeLiterals(
      [
        [':method', 'POST'],
        [':scheme', 'http'],
        [':path', '/toy.Echo/Unary'],
        [':authority', 'localhost'],
        ['content-type', 'application/grpc'],
        ...extra,
      ].map(([name, value]) => ({ name: name!, value: value!, sensitive: false })),
    );
  }

  /** `bytes` as HEADERS and CONTINUATION frames of `size` octets on `streamId`. */
  function headerFrames(streamId: number, bytes: Buffer, size: number): Buffer[] {
    const frames: Buffer[] = [];
    for (let offset = 0; offset < bytes.length; offset += size) {
      const end = Math.min(offset + size, bytes.length);
      const type = offset === 0 ? FRAME_HEADERS : FRAME_CONTINUATION;
      const flags = end === bytes.length ? FLAG_END_HEADERS : 0;
      frames.push(frameOf(type, flags, streamId, bytes.subarray(offset, end)));
    }
    return frames;
  }

  /** What a raw client is answered: resets, GOAWAY, and responses without grpc-js's date. */
  function answer(frames: Frame[]): string[] {
    const decoder = new HeaderBlockDecoder();
    return frames.flatMap((f) => {
      if (f.type === FRAME_GOAWAY || f.type === FRAME_RST_STREAM) {
        return [frameOf(f.type, f.flags, f.streamId, f.payload).toString('hex')];
      }
      if (f.type === FRAME_HEADERS) {
        const fields = decoder.decode(f.payload).filter((field) => field.name !== 'date');
        return [`HEADERS ${f.streamId} ${fields.map((x) => `${x.name}=${x.value}`).join(' ')}`];
      }
      return [];
    });
  }

  /** Writes `frames` after the preface to each server; what each answered once `done` holds. */
  async function sideBySide(
    frames: Buffer[],
    done: (frames: Frame[], closed: boolean) => boolean,
  ): Promise<{ answers: string[][]; closed: boolean[] }> {
    const answers: string[][] = [];
    const closed: boolean[] = [];
    for (const server of await servers()) {
      const client = await rawConnect(server.port);
      cleanups.push(() => client.socket.destroy());
      client.socket.write(Buffer.concat([PREFACE, settingsFrame([]), ...frames]));
      await until(() => done(client.frames, client.isClosed()));
      // Anything more would come at once.
      await new Promise((resolve) => setTimeout(resolve, 50));
      answers.push(answer(client.frames));
      closed.push(client.isClosed());
    }
    return { answers, closed };
  }

  const request = (id: number) =>
    frameOf(FRAME_DATA, FLAG_END_STREAM, id, grpcFrame(Buffer.from('x')));
  const answered = (frames: Frame[]) =>
    frames.some((f) => f.type === FRAME_HEADERS && f.flags & FLAG_END_STREAM);
  const OK_ANSWER = [
    'HEADERS 1 :status=200 content-type=application/grpc+proto grpc-accept-encoding=identity,deflate,gzip grpc-encoding=identity',
    'HEADERS 1 grpc-status=0 grpc-message=OK',
  ];

  it('serves a header block of HEADERS and 8 CONTINUATION frames', async () => {
    const frames = headerFrames(1, block([['x-big', '#'.repeat(700)]]), 100);
    expect(frames).toHaveLength(9);
    const { answers } = await sideBySide([...frames, request(1)], answered);
    expect(answers).toEqual([OK_ANSWER, OK_ANSWER]);
  });

  it('ends the connection at the 9th CONTINUATION frame with GOAWAY INTERNAL_ERROR', async () => {
    const frames = headerFrames(1, block([['x-big', '#'.repeat(800)]]), 100);
    expect(frames).toHaveLength(10);
    const { answers, closed } = await sideBySide([...frames, request(1)], (_f, c) => c);
    const goaway = goawayFrame(1, INTERNAL_ERROR).toString('hex');
    expect(answers).toEqual([[goaway], [goaway]]);
    expect(closed).toEqual([true, true]);
  });

  it('buffers no endless header block: 1.2 MB of CONTINUATION frames end at the 9th', async () => {
    const fields = Array.from({ length: 20 }, (_, i): [string, string] => [
      `x-${i}`,
      '#'.repeat(60_000),
    ]);
    const frames = headerFrames(1, block(fields), 16_384);
    expect(frames.length).toBeGreaterThan(70);
    const { answers, closed } = await sideBySide(frames, (_f, c) => c);
    const goaway = goawayFrame(1, INTERNAL_ERROR).toString('hex');
    expect(answers).toEqual([[goaway], [goaway]]);
    expect(closed).toEqual([true, true]);
  });

  it('answers a literal announced longer than 65,536 octets with GOAWAY COMPRESSION_ERROR at once', async () => {
    // Only the start of the block: the length prefix is enough.
    const start = block([['x-big', '#'.repeat(65_537)]]).subarray(0, 200);
    const frames = [frameOf(FRAME_HEADERS, 0, 1, start)];
    const { answers } = await sideBySide(frames, (f) => f.some((x) => x.type === FRAME_GOAWAY));
    const goaway = goawayFrame(1, COMPRESSION_ERROR).toString('hex');
    expect(answers).toEqual([[goaway], [goaway]]);
  });

  it('resets a stream of 129 fields with ENHANCE_YOUR_CALM and serves the next', async () => {
    const many = Array.from({ length: 124 }, (_, i): [string, string] => [`x-${i}`, 'v']);
    const fits = Array.from({ length: 123 }, (_, i): [string, string] => [`x-${i}`, 'v']);
    const frames = [
      ...headerFrames(1, block(many), 16_384),
      request(1),
      ...headerFrames(3, block(fits), 16_384),
      request(3),
    ];
    const { answers } = await sideBySide(frames, (f) =>
      f.some((x) => x.type === FRAME_HEADERS && x.streamId === 3 && x.flags & FLAG_END_STREAM),
    );
    const reset = rstStreamFrame(1, ENHANCE_YOUR_CALM).toString('hex');
    const ok3 = OK_ANSWER.map((line) => line.replace('HEADERS 1', 'HEADERS 3'));
    expect(answers).toEqual([
      [reset, ...ok3],
      [reset, ...ok3],
    ]);
  });
});
