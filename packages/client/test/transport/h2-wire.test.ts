// The h2 transport's wire pieces, byte for byte: the request header block, the frames it writes,
// header blocks split into HEADERS and CONTINUATION frames, and HPACK decoding of a server that
// indexes its headers (RFC 7541's own examples).
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  FLAG_END_HEADERS,
  FLAG_END_STREAM,
  FRAME_CONTINUATION,
  FRAME_HEADERS,
  goawayFrame,
  headerFrames,
  rstStreamFrame,
  settingsFrame,
  windowUpdateFrame,
} from '../../src/transport/h2/frames.js';
import { HeaderBlockDecoder } from '../../src/transport/h2/hpack.js';
import { requestBlock, requestPrefix } from '../../src/transport/h2/request-headers.js';
import { headersOf } from '../../src/transport/h2-connection.js';

const hex = (text: string) => Buffer.from(text.replaceAll(' ', ''), 'hex');
const TEMPLATE = {
  scheme: 'http',
  authority: '127.0.0.1:2379',
  contentType: 'application/grpc+proto',
  userAgent: 'etcdkit-h2',
} as const;

describe('the request header block', () => {
  it('is static-table entries and literals without indexing, byte for byte', () => {
    const block = requestPrefix(TEMPLATE, '/etcdserverpb.KV/Range');
    expect(block.toString('hex')).toBe(
      [
        '83', // :method POST (static 3)
        '86', // :scheme http (static 6)
        '04',
        '16',
        Buffer.from('/etcdserverpb.KV/Range').toString('hex'), // :path, name 4
        '01',
        '0e',
        Buffer.from('127.0.0.1:2379').toString('hex'), // :authority, name 1
        '0f10',
        '16',
        Buffer.from('application/grpc+proto').toString('hex'), // content-type, 31
        '00',
        '02',
        Buffer.from('te').toString('hex'),
        '08',
        Buffer.from('trailers').toString('hex'),
        '0f2b',
        '0a',
        Buffer.from('etcdkit-h2').toString('hex'), // user-agent, name 58
      ].join(''),
    );
    expect(requestPrefix({ ...TEMPLATE, scheme: 'https' }, '/')[1]).toBe(0x87);
  });

  it('decodes to the fields it was made of, whatever the metadata, and changes no table', () => {
    const token = fc.stringMatching(/^[a-z][a-z0-9-]{0,20}$/);
    const value = fc.stringMatching(/^[ -~]{0,200}$/);
    fc.assert(
      fc.property(fc.array(fc.tuple(token, value), { maxLength: 8 }), (fields) => {
        const decoder = new HeaderBlockDecoder();
        const prefix = requestPrefix(TEMPLATE, '/etcdserverpb.KV/Put');
        const decoded = decoder.decode(requestBlock(prefix, fields));
        expect(decoded.map((f) => [f.name, f.value])).toEqual([
          [':method', 'POST'],
          [':scheme', 'http'],
          [':path', '/etcdserverpb.KV/Put'],
          [':authority', '127.0.0.1:2379'],
          ['content-type', 'application/grpc+proto'],
          ['te', 'trailers'],
          ['user-agent', 'etcdkit-h2'],
          ...fields,
        ]);
        // Nothing was indexed: the dynamic table is still empty.
        expect(() => decoder.decode(Buffer.from([0xbe]))).toThrow('index 62 is not in the table');
      }),
      { numRuns: 100 },
    );
  });
});

describe('frames', () => {
  it('writes SETTINGS, WINDOW_UPDATE, RST_STREAM and GOAWAY byte for byte', () => {
    expect(
      settingsFrame([
        [2, 0],
        [4, 524_288],
      ]).toString('hex'),
    ).toBe('00000c040000000000' + '000200000000' + '000400080000');
    expect(windowUpdateFrame(0, 16_711_681).toString('hex')).toBe(
      '000004080000000000' + '00ff0001',
    );
    expect(rstStreamFrame(3, 8).toString('hex')).toBe('000004030000000003' + '00000008');
    expect(goawayFrame(0, 1, 'x').toString('hex')).toBe(
      '000009070000000000' + '00000000' + '00000001' + '78',
    );
  });

  it('splits a header block into HEADERS and CONTINUATION frames no larger than the peer takes', () => {
    fc.assert(
      fc.property(
        fc.uint8Array({ minLength: 0, maxLength: 3000 }),
        fc.integer({ min: 1, max: 1024 }),
        fc.boolean(),
        (bytes, maxPayload, endStream) => {
          const block = Buffer.from(bytes);
          const parts = headerFrames(
            { streamId: 5, endStream, priority: undefined },
            block,
            maxPayload,
          );
          const frames: Array<{ type: number; flags: number; payload: Buffer }> = [];
          for (let i = 0; i < parts.length; i += 2) {
            const header = parts[i]!;
            expect(header.readUIntBE(0, 3)).toBe(parts[i + 1]!.length);
            expect(header.readUInt32BE(5)).toBe(5);
            frames.push({ type: header[3]!, flags: header[4]!, payload: parts[i + 1]! });
          }
          expect(frames[0]!.type).toBe(FRAME_HEADERS);
          expect((frames[0]!.flags & FLAG_END_STREAM) !== 0).toBe(endStream);
          for (const [i, frame] of frames.entries()) {
            if (i > 0) expect(frame.type).toBe(FRAME_CONTINUATION);
            expect(frame.payload.length).toBeLessThanOrEqual(maxPayload);
            expect((frame.flags & FLAG_END_HEADERS) !== 0).toBe(i === frames.length - 1);
          }
          expect(Buffer.concat(frames.map((f) => f.payload)).equals(block)).toBe(true);
        },
      ),
      { numRuns: 200 },
    );
  });
});

describe('HPACK decoding of indexed, Huffman-coded headers', () => {
  it('follows the dynamic table across blocks, with eviction (RFC 7541 C.6)', () => {
    // A server's responses, Huffman-coded, with a 256-octet table: entries are evicted as it fills.
    const decoder = new HeaderBlockDecoder(256);
    const first = decoder.decode(
      hex(
        '4882 6402 5885 aec3 771a 4b61 96d0 7abe 9410 54d4 44a8 2005 9504 0b81 66e0 82a6 2d1b ff6e ' +
          '919d 29ad 1718 63c7 8f0b 97c8 e9ae 82ae 43d3',
      ),
    );
    expect(headersOf(first)).toEqual({
      ':status': 302,
      'cache-control': 'private',
      date: 'Mon, 21 Oct 2013 20:13:21 GMT',
      location: 'https://www.example.com',
    });
    const second = decoder.decode(hex('4883 640e ff c1 c0 bf'));
    expect(headersOf(second)).toEqual({
      ':status': 307,
      'cache-control': 'private',
      date: 'Mon, 21 Oct 2013 20:13:21 GMT',
      location: 'https://www.example.com',
    });
    const third = decoder.decode(
      hex(
        '88c1 6196 d07a be94 1054 d444 a820 0595 040b 8166 e084 a62d 1bff c05a 839b d9ab 77ad 94e7 ' +
          '821d d7f2 e6c7 b335 dfdf cd5b 3960 d5af 2708 7f36 72c1 ab27 0fb5 291f 9587 3160 65c0 03ed ' +
          '4ee5 b106 3d50 07',
      ),
    );
    expect(headersOf(third)).toEqual({
      ':status': 200,
      'cache-control': 'private',
      date: 'Mon, 21 Oct 2013 20:13:22 GMT',
      location: 'https://www.example.com',
      'content-encoding': 'gzip',
      'set-cookie': 'foo=ASDJKHQKBZXOQWEOPIUAXQWEOIU; max-age=3600; version=1',
    });
  });

  it('keeps repeated names as an array, as node:http2 does', () => {
    expect(
      headersOf([
        { name: 'x-a', value: '1', sensitive: false },
        { name: 'x-a', value: '2', sensitive: false },
        { name: 'x-a', value: '3', sensitive: false },
      ]),
    ).toEqual({ 'x-a': ['1', '2', '3'] });
  });
});
