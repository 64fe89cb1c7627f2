// HPACK's Huffman code (RFC 7541, Appendix B), decoding only. The code is canonical: codes of one
// length are consecutive and follow symbol order, and each length's first code continues from the
// last code of the length before. So the code lengths of the 257 symbols (256 bytes and EOS) are
// all the table needs; the codes follow from them.

/**
 * Code length of every symbol 0..256, as one letter each: `a` is 5 bits, `b` 6 ... `z` 30.
 * Checked (test/transport/h2/hpack.test.ts) against the RFC's examples of Huffman-encoded strings.
 */
const CODE_LENGTHS =
  'isxxxxxxxtzxxzxxxxxxxxzxxxxxxxxxbffhibdgffdgdbbbaaabbbbbbbcdkbhfibccccccccccccccccccccccdcdioij' +
  'bkabababbbaccbbbabcbaabccccckgjixprpprrrsrssssststtrstssssqrsrsstrqprrssqsrrtqrssqqrqsrssprrrsrr' +
  'svvporsruvvvwwvtuoqvwwvwtqqvvxwwwptpqrqqsrruuttvsvwvvwwwwwxwwwwwvz';

const EOS = 256;
const MAX_LENGTH = 30;

/** A string that is not valid HPACK Huffman encoding. */
export class HuffmanError extends Error {
  constructor(message: string) {
    super(`invalid Huffman-encoded string: ${message}`);
    this.name = 'HuffmanError';
  }
}

interface CanonicalCode {
  /** Symbols ordered by (code length, symbol). */
  readonly symbols: Uint16Array;
  /** First code of each length. */
  readonly firstCode: Int32Array;
  /** Number of codes of each length. */
  readonly count: Int32Array;
  /** Index in {@link symbols} of the first symbol of each length. */
  readonly firstIndex: Int32Array;
}

function buildCode(): CanonicalCode {
  const lengths = [...CODE_LENGTHS].map((letter) => letter.charCodeAt(0) - 'a'.charCodeAt(0) + 5);
  const count = new Int32Array(MAX_LENGTH + 1);
  for (const length of lengths) count[length]!++;
  const order = lengths
    .map((length, symbol) => ({ length, symbol }))
    .sort((a, b) => a.length - b.length || a.symbol - b.symbol);
  const symbols = Uint16Array.from(order, (entry) => entry.symbol);
  const firstCode = new Int32Array(MAX_LENGTH + 1);
  const firstIndex = new Int32Array(MAX_LENGTH + 1);
  let code = 0;
  let index = 0;
  for (let length = 1; length <= MAX_LENGTH; length++) {
    firstCode[length] = code;
    firstIndex[length] = index;
    code = (code + count[length]!) * 2;
    index += count[length]!;
  }
  return { symbols, firstCode, count, firstIndex };
}

const CODE = buildCode();

/** Decodes a Huffman-encoded HPACK string into its bytes. */
export function decodeHuffman(encoded: Uint8Array): Buffer {
  const out: number[] = [];
  let code = 0;
  let length = 0;
  for (const byte of encoded) {
    for (let bit = 7; bit >= 0; bit--) {
      code = code * 2 + ((byte >> bit) & 1);
      length++;
      const offset = code - CODE.firstCode[length]!;
      if (offset >= 0 && offset < CODE.count[length]!) {
        const symbol = CODE.symbols[CODE.firstIndex[length]! + offset]!;
        if (symbol === EOS) throw new HuffmanError('EOS in the string');
        out.push(symbol);
        code = 0;
        length = 0;
      } else if (length === MAX_LENGTH) {
        throw new HuffmanError('no symbol has this code');
      }
    }
  }
  // What is left must be padding: fewer than 8 bits, all ones (a prefix of EOS).
  if (length > 7 || code !== 2 ** length - 1) throw new HuffmanError('bad padding');
  return Buffer.from(out);
}
