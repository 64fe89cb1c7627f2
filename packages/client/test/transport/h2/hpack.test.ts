// HPACK decoding (RFC 7541) as the client's HTTP/2 transport and the server's authority rewriter
// need it, checked with the RFC's examples.

import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  encodeLiterals,
  HeaderBlockDecoder,
  type HeaderField,
  MisplacedTableSizeUpdateError,
  writeInteger,
  writeString,
} from '../../../src/transport/h2/hpack.js';
import { decodeHuffman } from '../../../src/transport/h2/huffman.js';

const hex = (text: string) => Buffer.from(text.replaceAll(' ', ''), 'hex');
const pairs = (fields: readonly HeaderField[]) => fields.map((f) => `${f.name}: ${f.value}`);

describe('Huffman decoding', () => {
  it.each([
    ['f1e3 c2e5 f23a 6ba0 ab90 f4ff', 'www.example.com'],
    ['a8eb 1064 9cbf', 'no-cache'],
    ['25a8 49e9 5ba9 7d7f', 'custom-key'],
    ['25a8 49e9 5bb8 e8b4 bf', 'custom-value'],
    ['6402', '302'],
    ['aec3 771a 4b', 'private'],
    ['d07a be94 1054 d444 a820 0595 040b 8166 e082 a62d 1bff', 'Mon, 21 Oct 2013 20:13:21 GMT'],
    ['9d29 ad17 1863 c78f 0b97 c8e9 ae82 ae43 d3', 'https://www.example.com'],
    // The :authority etcdctl 3.4 sent on its maintenance connection.
    ['9d29 aee3 0c04 4eae 05c0 b86e 3427 5b0f', 'http://127.0.0.1:42751'],
  ])('%s is %j (RFC 7541 Appendix C)', (encoded, text) => {
    expect(decodeHuffman(hex(encoded)).toString('latin1')).toBe(text);
  });

  it('refuses padding that is not a prefix of EOS or longer than 7 bits', () => {
    expect(() => decodeHuffman(hex('18'))).toThrow('bad padding');
    expect(() => decodeHuffman(hex('64 02 ff'))).toThrow('bad padding');
  });

  it('refuses the EOS symbol inside a string', () => {
    expect(() => decodeHuffman(hex('ffff ffff'))).toThrow('EOS');
  });
});

describe('HeaderBlockDecoder', () => {
  it('follows the dynamic table across the blocks of a connection (RFC 7541 C.3)', () => {
    const decoder = new HeaderBlockDecoder();
    expect(pairs(decoder.decode(hex('8286 8441 0f77 7777 2e65 7861 6d70 6c65 2e63 6f6d')))).toEqual(
      [':method: GET', ':scheme: http', ':path: /', ':authority: www.example.com'],
    );
    expect(pairs(decoder.decode(hex('8286 84be 5808 6e6f 2d63 6163 6865')))).toEqual([
      ':method: GET',
      ':scheme: http',
      ':path: /',
      ':authority: www.example.com',
      'cache-control: no-cache',
    ]);
    expect(
      pairs(
        decoder.decode(
          hex('8287 85bf 400a 6375 7374 6f6d 2d6b 6579 0c63 7573 746f 6d2d 7661 6c75 65'),
        ),
      ),
    ).toEqual([
      ':method: GET',
      ':scheme: https',
      ':path: /index.html',
      ':authority: www.example.com',
      'custom-key: custom-value',
    ]);
  });

  it('decodes the same requests Huffman-encoded (RFC 7541 C.4)', () => {
    const decoder = new HeaderBlockDecoder();
    decoder.decode(hex('8286 8441 8cf1 e3c2 e5f2 3a6b a0ab 90f4 ff'));
    decoder.decode(hex('8286 84be 5886 a8eb 1064 9cbf'));
    expect(
      pairs(decoder.decode(hex('8287 85bf 4088 25a8 49e9 5ba9 7d7f 8925 a849 e95b b8e8 b4bf'))),
    ).toEqual([
      ':method: GET',
      ':scheme: https',
      ':path: /index.html',
      ':authority: www.example.com',
      'custom-key: custom-value',
    ]);
  });

  it('evicts the oldest entries when a size update shrinks the table', () => {
    const decoder = new HeaderBlockDecoder();
    decoder.decode(hex('418c f1e3 c2e5 f23a 6ba0 ab90 f4ff'));
    // Size update to 0: the table empties, so index 62 no longer exists.
    expect(() => decoder.decode(hex('20 be'))).toThrow('index 62 is not in the table');
  });

  it('refuses a size update above the table size it was created with (RFC 7541, 6.3)', () => {
    const decoder = new HeaderBlockDecoder(4096);
    expect(decoder.decode(hex('3fe11f'))).toEqual([]); // 4096
    expect(() => decoder.decode(hex('3fe21f'))).toThrow('table size 4097 above the limit');
  });

  it('takes size updates only at the beginning of a block (RFC 7541, 4.2)', () => {
    // Three updates before the first field, as nghttp2 accepts: sizes 0, 1 and 4096.
    expect(pairs(new HeaderBlockDecoder().decode(hex('20 21 3fe11f 82')))).toEqual([
      ':method: GET',
    ]);
    // ":method: GET", then an update to 0: a decoding error, whether more fields follow or not.
    expect(() => new HeaderBlockDecoder().decode(hex('82 20 84'))).toThrow(
      MisplacedTableSizeUpdateError,
    );
    expect(() => new HeaderBlockDecoder().decode(hex('82 20'))).toThrow(
      'invalid HPACK header block: dynamic table size update after a header field',
    );
    // After a literal that added an entry, too: the update must not have emptied the table first.
    expect(() => new HeaderBlockDecoder().decode(hex('4001 61 0162 20'))).toThrow(
      MisplacedTableSizeUpdateError,
    );
  });

  it('refuses a block whose header list is larger than the limit it was created with', () => {
    // ":method: GET" (static 2) counts 7 + 3 + 32 = 42 octets.
    expect(new HeaderBlockDecoder(4096, 84).decode(hex('8282'))).toHaveLength(2);
    expect(() => new HeaderBlockDecoder(4096, 84).decode(hex('828282'))).toThrow(
      'header list larger than 84 octets',
    );
  });

  it('refuses truncated blocks and unknown indexes', () => {
    expect(() => new HeaderBlockDecoder().decode(hex('41 8c f1e3'))).toThrow('string past the end');
    expect(() => new HeaderBlockDecoder().decode(hex('ff 80'))).toThrow('truncated');
    expect(() => new HeaderBlockDecoder().decode(hex('80'))).toThrow('index 0');
  });

  it('re-encodes fields as literals any decoder reads back unchanged', () => {
    const fields: HeaderField[] = [
      { name: ':authority', value: '127.0.0.1:2379', sensitive: false },
      { name: 'authorization', value: 'x'.repeat(300), sensitive: true },
    ];
    const decoder = new HeaderBlockDecoder();
    expect(decoder.decode(encodeLiterals(fields))).toEqual(fields);
    // Nothing was added to the table: the next block may not refer to index 62.
    expect(() => decoder.decode(hex('be'))).toThrow('not in the table');
  });

  it('writes a string literal as its UTF-8 octets after their count, ASCII or not (RFC 7541, 5.2)', () => {
    const text = fc.oneof(
      fc.string({ maxLength: 200 }),
      fc.string({ unit: 'binary', maxLength: 40 }),
    );
    fc.assert(
      fc.property(text, (value) => {
        const raw = Buffer.from(value, 'utf8');
        const expected: number[] = [];
        writeInteger(expected, 0x00, 7, raw.length);
        expected.push(...raw);
        const bytes: number[] = [];
        writeString(bytes, value);
        expect(bytes).toEqual(expected);
      }),
      { numRuns: 1000 },
    );
    const bytes: number[] = [];
    writeString(bytes, 'grpc-timeout');
    expect(Buffer.from(bytes).toString('latin1')).toBe('\x0cgrpc-timeout');
  });
});
