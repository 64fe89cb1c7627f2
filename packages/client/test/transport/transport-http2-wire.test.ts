// The wire pieces of the node:http2 transport: gRPC message framing and status parsing.
import { constants } from 'node:http2';
import { describe, expect, it } from 'vitest';
import {
  decodeGrpcMessage,
  encodeTimeout,
  responseMetadata,
  statusFromHeaders,
  statusFromHttp,
  statusFromReset,
} from '../../src/transport/grpc-status.js';
import {
  encodeMessage as encodeFrame,
  MessageReader as FrameDecoder,
  GrpcMessageError as FrameError,
} from '../../src/transport/h2/grpc-message.js';
import { GrpcStatus } from '../../src/transport/types.js';

const text = (buffers: Buffer[]) => buffers.map((b) => b.toString());

describe('gRPC framing', () => {
  it('prefixes a message with a zero flag and its big-endian length', () => {
    expect([...encodeFrame(Buffer.from('abc'))]).toEqual([0, 0, 0, 0, 3, 97, 98, 99]);
    expect([...encodeFrame(new Uint8Array())]).toEqual([0, 0, 0, 0, 0]);
  });

  it('splits messages whatever the chunk boundaries, empty messages included', () => {
    const wire = Buffer.concat([
      encodeFrame(Buffer.from('first')),
      encodeFrame(new Uint8Array()),
      encodeFrame(Buffer.from('x'.repeat(300))),
    ]);
    for (const size of [1, 2, 5, 7, 64, wire.length]) {
      const decoder = new FrameDecoder(1024);
      const out: Buffer[] = [];
      for (let at = 0; at < wire.length; at += size) {
        out.push(...decoder.push(wire.subarray(at, at + size)));
      }
      expect(text(out)).toEqual(['first', '', 'x'.repeat(300)]);
      expect(decoder.partial).toBe(false);
    }
  });

  it('reports a response cut inside a message as partial', () => {
    const decoder = new FrameDecoder(1024);
    expect(decoder.push(encodeFrame(Buffer.from('abcdef')).subarray(0, 7))).toEqual([]);
    expect(decoder.partial).toBe(true);
  });

  it('refuses a message over the limit (ResourceExhausted) and a compressed one (Internal)', () => {
    const over = () => new FrameDecoder(4).push(encodeFrame(Buffer.from('12345')));
    expect(over).toThrow(FrameError);
    expect(over).toThrow('Received message larger than max (5 vs 4)');
    try {
      over();
    } catch (error) {
      expect((error as FrameError).code).toBe(GrpcStatus.ResourceExhausted);
    }
    const compressed = encodeFrame(Buffer.from('a'));
    compressed[0] = 1;
    try {
      new FrameDecoder(4).push(compressed);
      expect.unreachable();
    } catch (error) {
      expect((error as FrameError).code).toBe(GrpcStatus.Internal);
    }
  });
});

describe('gRPC status and headers', () => {
  it('writes grpc-timeout with at most eight digits, rounding up', () => {
    expect(encodeTimeout(0)).toBe('1m');
    expect(encodeTimeout(1.2)).toBe('2m');
    expect(encodeTimeout(5_000)).toBe('5000m');
    expect(encodeTimeout(99_999_999)).toBe('99999999m');
    expect(encodeTimeout(100_000_000)).toBe('100000S');
    expect(encodeTimeout(100_000_000_000)).toBe('1666667M');
  });

  it('percent-decodes grpc-message as UTF-8 and keeps a malformed one as is', () => {
    expect(decodeGrpcMessage('etcdserver: key is not provided')).toBe(
      'etcdserver: key is not provided',
    );
    expect(decodeGrpcMessage('a%3A%20b%20%E2%9C%93')).toBe('a: b ✓');
    expect(decodeGrpcMessage('100%')).toBe('100%');
  });

  it('reads the status from trailers or trailers-only headers', () => {
    expect(
      statusFromHeaders({ 'grpc-status': '3', 'grpc-message': 'bad%20key' }, { a: 'b' }),
    ).toEqual({
      code: GrpcStatus.InvalidArgument,
      details: 'bad key',
      metadata: { a: 'b' },
    });
    expect(statusFromHeaders({ 'content-type': 'application/grpc' }, {})).toBeUndefined();
    expect(statusFromHeaders({ 'grpc-status': '99' }, {})).toEqual({
      code: GrpcStatus.Unknown,
      details: 'invalid grpc-status 99',
      metadata: {},
    });
  });

  it('keeps application metadata only, later blocks winning', () => {
    expect(
      responseMetadata(
        { ':path': '/x', 'content-type': 'application/grpc', 'x-a': '1', 'x-b': ['2', '3'] },
        { 'grpc-status': '0', 'grpc-message': '', 'x-a': '4', 'x-c-bin': 'AAE=' },
      ),
    ).toEqual({ 'x-a': '4', 'x-b': '2,3', 'x-c-bin': 'AAE=' });
  });

  it('maps HTTP statuses and stream resets as gRPC specifies', () => {
    expect(statusFromHttp(400).code).toBe(GrpcStatus.Internal);
    expect(statusFromHttp(401).code).toBe(GrpcStatus.Unauthenticated);
    expect(statusFromHttp(403).code).toBe(GrpcStatus.PermissionDenied);
    expect(statusFromHttp(404).code).toBe(GrpcStatus.Unimplemented);
    for (const http of [429, 502, 503, 504]) {
      expect(statusFromHttp(http).code).toBe(GrpcStatus.Unavailable);
    }
    expect(statusFromHttp(500)).toEqual({
      code: GrpcStatus.Unknown,
      details: 'Received HTTP status code 500',
    });
    expect(statusFromReset(constants.NGHTTP2_NO_ERROR).code).toBe(GrpcStatus.Internal);
    expect(statusFromReset(constants.NGHTTP2_REFUSED_STREAM).code).toBe(GrpcStatus.Unavailable);
    expect(statusFromReset(constants.NGHTTP2_CANCEL).code).toBe(GrpcStatus.Cancelled);
    expect(statusFromReset(constants.NGHTTP2_ENHANCE_YOUR_CALM).code).toBe(
      GrpcStatus.ResourceExhausted,
    );
    expect(statusFromReset(constants.NGHTTP2_INADEQUATE_SECURITY).code).toBe(
      GrpcStatus.PermissionDenied,
    );
    expect(statusFromReset(constants.NGHTTP2_PROTOCOL_ERROR).code).toBe(GrpcStatus.Internal);
  });
});
