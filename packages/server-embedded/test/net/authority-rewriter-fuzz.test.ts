// Property-based tests of the authority rewriter (the HPACK filter on plain client connections),
// fed directly through a stand-in socket so that every chunk boundary is chosen by the test:
// - generated connections (a test HPACK encoder using the dynamic table, evictions, size
//   updates, CONTINUATION frames, padding, priority) come out with every header intact but the
//   scheme cut off :authority, as blocks that neither use nor change the server's table, and every
//   other frame byte for byte; connections whose first authority has no scheme come out unchanged;
// - garbage, truncated and mutated streams never throw out of the filter, give the same result
//   however they are chunked, and are either handed over or end in a closed connection;
// - a block with a table size update after a field, which every decoder refuses, is handed over
//   as it came, rewritten connection or not, for the server to refuse;
// - at the client's end, what was held for want of the rest of a frame is handed over (unless it
//   is part of a header block of a rewritten connection), and then the end.
import { EventEmitter } from 'node:events';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import * as fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { acceptSchemeInAuthority } from '../../src/net/authority-rewriter.js';
import {
  type BlockItem,
  decodeLiteralsOnly,
  type Field,
  Flag,
  type Frame,
  FrameType,
  frame,
  PREFACE,
  parseFrames,
  type Representation,
  TestHpackEncoder,
} from '../support/hpack-encoder.js';

/** A URI scheme and "://" at the start (RFC 3986, 3.1): what the rewriter cuts off. */
const SCHEME_PREFIX = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;
const MAX_FRAME_PAYLOAD = 16_384;

/** Just what the rewriter uses of its socket; records whether it was destroyed. */
class StandInSocket extends EventEmitter {
  destroyed = false;
  pause(): this {
    return this;
  }
  resume(): this {
    return this;
  }
  write(_chunk: Buffer, callback?: () => void): boolean {
    callback?.();
    return true;
  }
  end(): this {
    return this;
  }
  destroy(): this {
    this.destroyed = true;
    return this;
  }
  cork(): void {}
  uncork(): void {}
}

interface FilterResult {
  /** What the filter handed to the HTTP/2 server (meaningless once closed). */
  readonly output: Buffer;
  /** Whether the filter closed the connection. */
  readonly closed: boolean;
}

/** Feeds `chunks` to a fresh filter, as a client socket would deliver them. */
function runFilter(chunks: readonly Buffer[]): FilterResult {
  const { filter, result } = feedFilter(chunks, false);
  filter.destroy();
  return result;
}

/**
 * Feeds `chunks` to a fresh filter and then the client's end (EOF); also tells whether the filter
 * ended its own output after what it handed over.
 */
async function runFilterToEnd(
  chunks: readonly Buffer[],
): Promise<FilterResult & { readonly ended: boolean }> {
  const { filter, result } = feedFilter(chunks, true);
  let ended = false;
  filter.on('end', () => {
    ended = true;
  });
  // A readable stream emits 'end' on a later tick than the read that found it.
  await new Promise((resolve) => setImmediate(resolve));
  filter.destroy();
  return { ...result, ended };
}

function feedFilter(
  chunks: readonly Buffer[],
  end: boolean,
): { filter: Duplex; result: FilterResult } {
  const socket = new StandInSocket();
  const filter = acceptSchemeInAuthority(socket as unknown as Socket);
  filter.on('error', () => {});
  for (const chunk of chunks) {
    socket.emit('data', chunk);
    // A closed socket delivers nothing more.
    if (filter.destroyed) break;
  }
  if (end && !filter.destroyed) socket.emit('end');
  const out: Buffer[] = [];
  for (let piece = filter.read(); piece !== null; piece = filter.read()) out.push(piece as Buffer);
  const closed = filter.destroyed || socket.destroyed;
  return { filter, result: { output: Buffer.concat(out), closed } };
}

/** Byte equality, compared as such (a deep comparison of large buffers is slow), shown as hex. */
function expectBytes(actual: Buffer, expected: Buffer): void {
  if (!actual.equals(expected)) expect(actual.toString('hex')).toBe(expected.toString('hex'));
}

/** The filter handed `bytes` over exactly and kept the connection open. */
function expectHandedOver(result: FilterResult, bytes: Buffer): void {
  expect(result.closed).toBe(false);
  expectBytes(result.output, bytes);
}

/** Cuts `bytes` at the given positions (taken modulo its length). */
function split(bytes: Buffer, cuts: readonly number[]): Buffer[] {
  const at = [...new Set(cuts.map((cut) => cut % (bytes.length + 1)))].sort((a, b) => a - b);
  const chunks: Buffer[] = [];
  let from = 0;
  for (const to of [...at, bytes.length]) {
    if (to > from) chunks.push(bytes.subarray(from, to));
    from = to;
  }
  return chunks;
}

/** Chunk boundaries: a few random cuts, many random cuts, or one byte at a time for short input. */
const cutsFor = (length: number): fc.Arbitrary<number[]> =>
  fc.oneof(
    fc.array(fc.nat(), { maxLength: 4 }),
    fc.array(fc.nat(), { maxLength: 60 }),
    fc.constant<number[]>(length <= 4096 ? Array.from({ length }, (_, i) => i) : []),
  );

// --- Generated connections ---------------------------------------------------------------------

const latin1 = (maxLength: number): fc.Arbitrary<string> =>
  fc.uint8Array({ maxLength }).map((bytes) => Buffer.from(bytes).toString('latin1'));

const headerName: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom(
    ':method',
    ':path',
    ':scheme',
    'content-type',
    'te',
    'user-agent',
    'authorization',
    'cookie',
    'grpc-timeout',
    'x-a',
  ),
  fc.stringMatching(/^[a-z0-9-]{1,12}$/),
  latin1(20),
);

const headerValue: fc.Arbitrary<string> = fc.oneof(
  { weight: 4, arbitrary: fc.constantFrom('', 'GET', 'POST', '/', 'http', 'application/grpc') },
  { weight: 6, arbitrary: latin1(40) },
  // Long values: entries evict the table's others, or are too large for it at all.
  { weight: 1, arbitrary: latin1(5000) },
);

const schemeAuthority: fc.Arbitrary<string> = fc
  .tuple(
    fc.oneof(
      fc.constantFrom('http', 'https', 'unix'),
      fc.stringMatching(/^[A-Za-z][A-Za-z0-9+.-]{0,8}$/),
    ),
    fc.oneof(fc.constantFrom('127.0.0.1:2379', 'localhost:12379', '[::1]:1', ''), latin1(30)),
  )
  .map(([scheme, rest]) => `${scheme}://${rest}`);

const plainAuthority: fc.Arbitrary<string> = fc.oneof(
  fc.constantFrom('127.0.0.1:2379', 'localhost', 'http:/x', '1http://x', ''),
  latin1(30).filter((text) => !SCHEME_PREFIX.test(text)),
);

const representation: fc.Arbitrary<Representation> = fc.constantFrom(
  'indexed',
  'incremental',
  'without',
  'never',
);

const fieldItem = (name: fc.Arbitrary<string>, value: fc.Arbitrary<string>) =>
  fc.record({ name, value, how: representation, nameByIndex: fc.boolean() }).map(
    ({ name, value, how, nameByIndex }): BlockItem => ({
      kind: 'field',
      field: { name, value, sensitive: false },
      how,
      nameByIndex,
    }),
  );

/**
 * A field whose table entry is close to a quarter of the default table (3 + 989 + 32 = 1024
 * octets): four of them fill it exactly, so evictions happen right at the boundary; few values,
 * so that later fields find them in the table.
 */
const quarterEntry: fc.Arbitrary<BlockItem> = fieldItem(
  fc.constant('x-a'),
  fc
    .tuple(fc.integer({ min: 987, max: 991 }), fc.constantFrom('a', 'b', 'c', 'd', 'e'))
    .map(([length, letter]) => letter.repeat(length)),
);

const sizeUpdates: fc.Arbitrary<BlockItem[]> = fc.array(
  fc
    .oneof(fc.constantFrom(0, 64, 1024, 2048, 4095, 4096), fc.integer({ min: 0, max: 4096 }))
    .map((size): BlockItem => ({ kind: 'size', size })),
  { maxLength: 2 },
);

/** A header block's items: size updates first (RFC 7541, 4.2), then fields. */
const blockItems = (authority: fc.Arbitrary<string> | undefined): fc.Arbitrary<BlockItem[]> =>
  fc
    .tuple(
      sizeUpdates,
      fc.array(
        fc.oneof({ weight: 4, arbitrary: fieldItem(headerName, headerValue) }, quarterEntry),
        { maxLength: 10 },
      ),
      authority === undefined
        ? fc.constant([])
        : fieldItem(fc.constant(':authority'), authority).map((item) => [item]),
      fc.nat(),
    )
    .map(([sizes, fields, extra, where]) => {
      const all = [...fields];
      all.splice(where % (all.length + 1), 0, ...extra);
      return [...sizes, ...all];
    });

/** How one header block is framed: flags, padding, priority and where CONTINUATIONs start. */
interface BlockFraming {
  readonly streamId: number;
  readonly endStream: boolean;
  readonly padding: Buffer | undefined;
  readonly priority: Buffer | undefined;
  readonly cuts: readonly number[];
}

const blockFraming: fc.Arbitrary<BlockFraming> = fc.record({
  streamId: fc.integer({ min: 1, max: 0x7fff_ffff }),
  endStream: fc.boolean(),
  padding: fc.option(
    fc.uint8Array({ maxLength: 20 }).map((bytes) => Buffer.from(bytes)),
    {
      nil: undefined,
    },
  ),
  priority: fc.option(
    fc.uint8Array({ minLength: 5, maxLength: 5 }).map((b) => Buffer.from(b)),
    {
      nil: undefined,
    },
  ),
  cuts: fc.array(fc.nat(), { maxLength: 3 }),
});

/** Any frame but HEADERS and CONTINUATION, which the filter must pass byte for byte. */
const otherFrame: fc.Arbitrary<Buffer> = fc
  .record({
    type: fc.oneof(
      fc.constantFrom(
        FrameType.DATA,
        FrameType.PRIORITY,
        FrameType.RST_STREAM,
        FrameType.SETTINGS,
        FrameType.PING,
        FrameType.GOAWAY,
        FrameType.WINDOW_UPDATE,
      ),
      fc
        .integer({ min: 0, max: 255 })
        .filter((t) => t !== FrameType.HEADERS && t !== FrameType.CONTINUATION),
    ),
    flags: fc.integer({ min: 0, max: 255 }),
    streamId: fc.integer({ min: 0, max: 0xffff_ffff }),
    payload: fc.uint8Array({ maxLength: 64 }),
  })
  .map(({ type, flags, streamId, payload }) => frame(type, flags, streamId, Buffer.from(payload)));

/** The frames of one header block. */
function headerBlockFrames(block: Buffer, framing: BlockFraming): Buffer[] {
  // Room for the padding length, padding and priority in the HEADERS frame.
  const room = MAX_FRAME_PAYLOAD - 1 - 255 - 5;
  const cuts = new Set(framing.cuts.map((cut) => cut % (block.length + 1)));
  for (let at = room; at < block.length; at += room) cuts.add(at);
  const fragments = split(block, [...cuts]);
  if (fragments.length === 0) fragments.push(Buffer.alloc(0));
  return fragments.map((fragment, index) => {
    const last = index === fragments.length - 1 ? Flag.END_HEADERS : 0;
    if (index > 0) return frame(FrameType.CONTINUATION, last, framing.streamId, fragment);
    let flags = last | (framing.endStream ? Flag.END_STREAM : 0);
    const parts: Buffer[] = [];
    if (framing.padding !== undefined) {
      flags |= Flag.PADDED;
      parts.push(Buffer.from([framing.padding.length]));
    }
    if (framing.priority !== undefined) {
      flags |= Flag.PRIORITY;
      parts.push(framing.priority);
    }
    parts.push(fragment);
    if (framing.padding !== undefined) parts.push(framing.padding);
    return frame(FrameType.HEADERS, flags, framing.streamId, Buffer.concat(parts));
  });
}

/** What a connection holds, in order, and what the server must be handed for it. */
type Expected =
  | { readonly kind: 'frame'; readonly raw: Buffer }
  | { readonly kind: 'block'; readonly fields: Field[]; readonly framing: BlockFraming };

interface Connection {
  readonly bytes: Buffer;
  readonly expected: Expected[];
  /** Whether the first header block's authority has a scheme: then every block is rewritten. */
  readonly rewritten: boolean;
}

type Step =
  | { kind: 'frame'; raw: Buffer }
  | { kind: 'block'; items: BlockItem[]; framing: BlockFraming };

const step = (authority: fc.Arbitrary<string> | undefined): fc.Arbitrary<Step> =>
  fc
    .record({ items: blockItems(authority), framing: blockFraming })
    .map(({ items, framing }): Step => ({ kind: 'block', items, framing }));

/**
 * A client's side of a connection: the preface, other frames, and header blocks whose first one
 * has an :authority with a scheme (`rewritten`) or without one.
 */
const connection: fc.Arbitrary<Connection> = fc
  .boolean()
  .chain((rewritten) =>
    fc.record({
      rewritten: fc.constant(rewritten),
      before: fc.array(otherFrame, { maxLength: 3 }),
      first: step(rewritten ? schemeAuthority : plainAuthority),
      rest: fc.array(
        fc.oneof(
          otherFrame.map((raw): Step => ({ kind: 'frame', raw })),
          step(fc.oneof(schemeAuthority, plainAuthority)),
          step(undefined),
        ),
        { maxLength: 8 },
      ),
    }),
  )
  .map(({ rewritten, before, first, rest }) => {
    const encoder = new TestHpackEncoder();
    const parts: Buffer[] = [PREFACE];
    const expected: Expected[] = [];
    const steps: Step[] = [...before.map((raw): Step => ({ kind: 'frame', raw })), first, ...rest];
    for (const s of steps) {
      if (s.kind === 'frame') {
        parts.push(s.raw);
        expected.push({ kind: 'frame', raw: s.raw });
        continue;
      }
      const { block, fields } = encoder.encode(s.items);
      parts.push(...headerBlockFrames(block, s.framing));
      const cut = fields.map((field) =>
        field.name === ':authority'
          ? { ...field, value: field.value.replace(SCHEME_PREFIX, '') }
          : field,
      );
      expected.push({ kind: 'block', fields: cut, framing: s.framing });
    }
    return { bytes: Buffer.concat(parts), expected, rewritten };
  });

/** Checks what the server was handed for a rewritten connection against what was sent. */
function expectRewritten(output: Buffer, expected: readonly Expected[]): void {
  expect(output.subarray(0, PREFACE.length)).toEqual(PREFACE);
  const frames = parseFrames(output.subarray(PREFACE.length));
  let at = 0;
  for (const item of expected) {
    if (item.kind === 'frame') {
      expectBytes(frames[at++]?.raw ?? Buffer.alloc(0), item.raw);
      continue;
    }
    const { framing } = item;
    const block: Frame[] = [frames[at++]!];
    while (!((block.at(-1)?.flags ?? Flag.END_HEADERS) & Flag.END_HEADERS))
      block.push(frames[at++]!);
    const [headers, ...continuations] = block;
    expect(headers?.type).toBe(FrameType.HEADERS);
    expect(headers?.streamId).toBe(framing.streamId);
    expect(headers?.flags).toBe(
      (framing.endStream ? Flag.END_STREAM : 0) |
        (framing.priority !== undefined ? Flag.PRIORITY : 0) |
        (continuations.length === 0 ? Flag.END_HEADERS : 0),
    );
    const fragments = [headers!.payload.subarray(framing.priority === undefined ? 0 : 5)];
    if (framing.priority !== undefined)
      expect(headers!.payload.subarray(0, 5)).toEqual(framing.priority);
    for (const [index, continuation] of continuations.entries()) {
      expect(continuation.type).toBe(FrameType.CONTINUATION);
      expect(continuation.streamId).toBe(framing.streamId);
      expect(continuation.flags).toBe(index === continuations.length - 1 ? Flag.END_HEADERS : 0);
      fragments.push(continuation.payload);
    }
    for (const f of block) expect(f.payload.length).toBeLessThanOrEqual(MAX_FRAME_PAYLOAD);
    expect(decodeLiteralsOnly(Buffer.concat(fragments))).toEqual(item.fields);
  }
  expect(at).toBe(frames.length);
}

describe('authority rewriter, fuzzed', () => {
  it('hands over every header with only the scheme cut off :authority, every other frame as is', () => {
    fc.assert(
      fc.property(
        connection.chain((c) => fc.tuple(fc.constant(c), cutsFor(c.bytes.length))),
        ([{ bytes, expected, rewritten }, cuts]) => {
          const { output, closed } = runFilter(split(bytes, cuts));
          expect(closed).toBe(false);
          if (rewritten) expectRewritten(output, expected);
          else expectBytes(output, bytes);
        },
      ),
      { numRuns: 300 },
    );
  });
});

/** How a connection cut short stands after its last whole frame. */
interface CutConnection {
  /** Whether a whole header block precedes the cut: the filter has decided what to do. */
  readonly decided: boolean;
  /** Whether a header block was left open (a whole frame without END_HEADERS was its last). */
  readonly blockOpen: boolean;
  /** The octets after the last whole frame. */
  readonly tail: Buffer;
}

function standing(bytes: Buffer): CutConnection {
  let decided = false;
  let blockOpen = false;
  let at = PREFACE.length;
  while (at + 9 <= bytes.length && at + 9 + bytes.readUIntBE(at, 3) <= bytes.length) {
    const type = bytes[at + 3];
    if (type === FrameType.HEADERS || type === FrameType.CONTINUATION) {
      blockOpen = (bytes[at + 4]! & Flag.END_HEADERS) === 0;
      decided ||= !blockOpen;
    }
    at += 9 + bytes.readUIntBE(at, 3);
  }
  return { decided, blockOpen, tail: bytes.subarray(Math.min(at, bytes.length)) };
}

describe("authority rewriter, at the client's end", () => {
  it('hands over what it held of a connection cut anywhere, then ends', async () => {
    await fc.assert(
      fc.asyncProperty(
        connection.chain((c) =>
          fc.tuple(fc.constant(c), fc.nat(c.bytes.length), cutsFor(c.bytes.length)),
        ),
        async ([{ bytes: whole, rewritten }, at, cuts]) => {
          const bytes = whole.subarray(0, at);
          const { output, closed, ended } = await runFilterToEnd(split(bytes, cuts));
          expect(closed).toBe(false);
          expect(ended).toBe(true);
          const { decided, blockOpen, tail } = standing(bytes);
          if (!rewritten || !decided) {
            // Passed through, or nothing changed yet: all of it, exactly.
            expectBytes(output, bytes);
            return;
          }
          // Rewritten: what whole frames gave, then a cut frame's octets unless they are part of
          // a header block, which (encoded for the client's table) cannot go over.
          const headerBlockCut = blockOpen || (tail.length >= 9 && tail[3] === FrameType.HEADERS);
          expectBytes(
            output,
            Buffer.concat([
              runFilter(split(bytes, cuts)).output,
              headerBlockCut ? Buffer.alloc(0) : tail,
            ]),
          );
        },
      ),
      { numRuns: 300 },
    );
  });
});

/**
 * A header block with a dynamic table size update after one of its fields (RFC 7541, 4.2), maybe
 * also some at its beginning where they belong, and maybe an :authority with a scheme. Its fields
 * are literals that neither use nor change the dynamic table, so that the update is what any
 * decoder refuses it for, whatever the connection's table holds.
 */
const misplacedSizeUpdate: fc.Arbitrary<Buffer> = fc
  .record({
    leading: sizeUpdates,
    authority: fc.option(fieldItem(fc.constant(':authority'), schemeAuthority), { nil: undefined }),
    before: fc.array(fieldItem(headerName, headerValue), { minLength: 1, maxLength: 4 }),
    size: fc.integer({ min: 0, max: 4096 }),
    after: fc.array(fieldItem(headerName, headerValue), { maxLength: 3 }),
    framing: blockFraming,
  })
  .map(({ leading, authority, before, size, after, framing }) => {
    const literal = (item: BlockItem): BlockItem =>
      item.kind === 'field' ? { ...item, how: item.how === 'never' ? 'never' : 'without' } : item;
    const items: BlockItem[] = [
      ...leading,
      ...(authority === undefined ? [] : [literal(authority)]),
      ...before.map(literal),
      { kind: 'size', size },
      ...after.map(literal),
    ];
    return Buffer.concat(headerBlockFrames(new TestHpackEncoder().encode(items).block, framing));
  });

describe('authority rewriter, on a table size update after a header field', () => {
  it('hands the block over as it came, and all that follows, for the server to refuse', () => {
    fc.assert(
      fc.property(
        fc.option(connection, { nil: undefined }),
        misplacedSizeUpdate,
        connection,
        fc.array(fc.nat(), { maxLength: 20 }),
        (before, bad, after, cuts) => {
          const start = before?.bytes ?? PREFACE;
          const bytes = Buffer.concat([start, bad, after.bytes.subarray(PREFACE.length)]);
          const { output, closed } = runFilter(split(bytes, cuts));
          expect(closed).toBe(false);
          if (before?.rewritten !== true) {
            // The first block (the bad one, or one without a scheme): nothing was changed.
            expectBytes(output, bytes);
            return;
          }
          expectBytes(
            output,
            Buffer.concat([runFilter([start]).output, bytes.subarray(start.length)]),
          );
        },
      ),
      { numRuns: 200 },
    );
  });
});

// --- Garbage, truncated and mutated streams ----------------------------------------------------

/** The preface's first `length` octets, or all of it. */
const prefacePrefix = fc
  .integer({ min: 0, max: PREFACE.length })
  .map((n) => PREFACE.subarray(0, n));

const garbage: fc.Arbitrary<Buffer> = fc.oneof(
  fc.uint8Array({ maxLength: 200 }).map((bytes) => Buffer.from(bytes)),
  fc
    .tuple(prefacePrefix, fc.uint8Array({ maxLength: 200 }))
    .map(([head, tail]) => Buffer.concat([head, tail])),
  fc
    .tuple(
      fc.array(
        fc.oneof(
          otherFrame,
          fc.uint8Array({ maxLength: 30 }).map((b) => Buffer.from(b)),
        ),
      ),
    )
    .map(([parts]) => Buffer.concat([PREFACE, ...parts])),
);

type Mutation =
  | { kind: 'flip'; at: number; bits: number }
  | { kind: 'delete'; at: number; length: number }
  | { kind: 'insert'; at: number; bytes: Uint8Array }
  | { kind: 'truncate'; at: number };

const mutation: fc.Arbitrary<Mutation> = fc.oneof(
  fc.record({
    kind: fc.constant('flip' as const),
    at: fc.nat(),
    bits: fc.integer({ min: 1, max: 255 }),
  }),
  fc.record({
    kind: fc.constant('delete' as const),
    at: fc.nat(),
    length: fc.integer({ min: 1, max: 20 }),
  }),
  fc.record({
    kind: fc.constant('insert' as const),
    at: fc.nat(),
    bytes: fc.uint8Array({ minLength: 1, maxLength: 20 }),
  }),
  fc.record({ kind: fc.constant('truncate' as const), at: fc.nat() }),
);

function mutate(bytes: Buffer, mutations: readonly Mutation[]): Buffer {
  let out = Buffer.from(bytes);
  for (const m of mutations) {
    const at = m.at % (out.length + 1);
    if (m.kind === 'flip' && at < out.length) out[at] = out[at]! ^ m.bits;
    else if (m.kind === 'delete')
      out = Buffer.concat([out.subarray(0, at), out.subarray(at + m.length)]);
    else if (m.kind === 'insert')
      out = Buffer.concat([out.subarray(0, at), m.bytes, out.subarray(at)]);
    else if (m.kind === 'truncate') out = out.subarray(0, at);
  }
  return out;
}

/** The filter's result for `bytes` in one piece must be its result for any chunking. */
function expectSameResultChunked(bytes: Buffer, cuts: readonly number[]): FilterResult {
  const whole = runFilter([bytes]);
  const chunked = runFilter(split(bytes, cuts));
  expect(chunked.closed).toBe(whole.closed);
  if (!whole.closed) expectBytes(chunked.output, whole.output);
  return whole;
}

describe('authority rewriter, fed garbage', () => {
  it('hands over what is not HTTP/2 at once, and never throws on anything', () => {
    fc.assert(
      fc.property(
        garbage.chain((bytes) => fc.tuple(fc.constant(bytes), cutsFor(bytes.length))),
        ([bytes, cuts]) => {
          const { output, closed } = expectSameResultChunked(bytes, cuts);
          expect(closed).toBe(false);
          // Nothing was rewritten (no header block in it has a scheme), so nothing may change.
          expectBytes(bytes.subarray(0, output.length), output);
          const head = bytes.subarray(0, PREFACE.length);
          if (!head.equals(PREFACE.subarray(0, head.length))) expectBytes(output, bytes);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('never throws on truncated or mutated connections, however they are chunked', () => {
    fc.assert(
      fc.property(
        fc
          .tuple(connection, fc.array(mutation, { minLength: 1, maxLength: 4 }))
          .map(([c, mutations]) => mutate(c.bytes, mutations))
          .chain((bytes) => fc.tuple(fc.constant(bytes), cutsFor(bytes.length))),
        ([bytes, cuts]) => {
          expectSameResultChunked(bytes, cuts);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('hands over a first header block it cannot read unchanged, with the frames after it', () => {
    // A block interrupted by another frame, or a HEADERS frame whose padding is longer than it:
    // the HTTP/2 server is to see exactly what the client sent, and refuse it itself.
    const broken: fc.Arbitrary<Buffer[]> = fc.oneof(
      fc
        .tuple(
          fc.integer({ min: 1, max: 0x7fff_ffff }),
          fc.uint8Array({ maxLength: 30 }),
          fc.oneof(
            otherFrame,
            fc
              .tuple(
                fc.integer({ min: 0, max: 255 }),
                fc.integer({ min: 0, max: 0x7fff_ffff }),
                fc.uint8Array({ maxLength: 30 }),
              )
              .map(([flags, id, payload]) =>
                frame(FrameType.HEADERS, flags, id, Buffer.from(payload)),
              ),
          ),
        )
        .map(([id, fragment, interruption]) => [
          frame(FrameType.HEADERS, 0, id, Buffer.from(fragment)),
          interruption,
        ]),
      fc
        .tuple(
          fc.integer({ min: 1, max: 0x7fff_ffff }),
          fc.uint8Array({ maxLength: 30 }),
          fc.nat(255),
        )
        .filter(([, payload, pad]) => pad >= payload.length)
        .map(([id, payload, pad]) => [
          frame(
            FrameType.HEADERS,
            Flag.PADDED | Flag.END_HEADERS,
            id,
            Buffer.from([pad, ...payload]),
          ),
        ]),
    );
    fc.assert(
      fc.property(
        fc.array(otherFrame, { maxLength: 2 }),
        broken,
        connection,
        fc.array(fc.nat(), { maxLength: 20 }),
        (before, bad, after, cuts) => {
          const bytes = Buffer.concat([
            PREFACE,
            ...before,
            ...bad,
            after.bytes.subarray(PREFACE.length),
          ]);
          expectHandedOver(runFilter(split(bytes, cuts)), bytes);
        },
      ),
      { numRuns: 200 },
    );
  });
});

/** Header frames no HTTP/2 server may accept, whatever the state of the connection. */
const malformedHeaders: fc.Arbitrary<Buffer[]> = fc.oneof(
  // A block interrupted by another frame, or by a CONTINUATION of another stream.
  fc
    .tuple(
      fc.integer({ min: 1, max: 0x7fff_ffff }),
      fc.uint8Array({ maxLength: 30 }),
      fc.oneof(
        otherFrame,
        fc
          .tuple(fc.integer({ min: 0, max: 255 }), fc.uint8Array({ maxLength: 30 }))
          .map(([flags, payload]) => frame(FrameType.HEADERS, flags, 1, Buffer.from(payload))),
        fc
          .tuple(fc.integer({ min: 0, max: 255 }), fc.uint8Array({ maxLength: 30 }))
          .map(([flags, payload]) => frame(FrameType.CONTINUATION, flags, 0, Buffer.from(payload))),
      ),
    )
    .map(([id, fragment, interruption]) => [
      frame(FrameType.HEADERS, 0, id, Buffer.from(fragment)),
      interruption,
    ]),
  // Padding longer than the payload, including no payload at all for the padding length.
  fc
    .tuple(fc.uint8Array({ maxLength: 30 }), fc.integer({ min: 0, max: 255 }), fc.boolean())
    .filter(([payload, pad]) => pad > payload.length)
    .map(([payload, pad, empty]) => [
      frame(
        FrameType.HEADERS,
        Flag.PADDED | Flag.END_HEADERS,
        1,
        empty ? Buffer.alloc(0) : Buffer.from([pad, ...payload]),
      ),
    ]),
  // Priority fields cut short.
  fc
    .uint8Array({ maxLength: 4 })
    .map((payload) => [
      frame(FrameType.HEADERS, Flag.PRIORITY | Flag.END_HEADERS, 1, Buffer.from(payload)),
    ]),
);

/** A frame header announcing more than SETTINGS_MAX_FRAME_SIZE, and some of that payload. */
const oversizedFrame: fc.Arbitrary<Buffer> = fc
  .tuple(
    fc.integer({ min: 0, max: 255 }),
    fc.integer({ min: MAX_FRAME_PAYLOAD + 1, max: 0xff_ffff }),
    fc.uint8Array({ maxLength: 100 }),
  )
  .map(([type, length, some]) => {
    const header = frame(type, 0, 1, Buffer.alloc(0));
    header.writeUIntBE(length, 0, 3);
    return Buffer.concat([header, some]);
  });

describe('authority rewriter, on a connection it rewrites', () => {
  const rewrittenConnection = connection.filter((c) => c.rewritten);

  it('closes the connection on header frames the server must refuse', () => {
    fc.assert(
      fc.property(
        rewrittenConnection,
        malformedHeaders,
        fc.array(fc.nat(), { maxLength: 20 }),
        ({ bytes }, bad, cuts) => {
          expect(runFilter(split(Buffer.concat([bytes, ...bad]), cuts)).closed).toBe(true);
        },
      ),
      { numRuns: 200 },
    );
  });

  it('closes the connection on a frame larger than the server allows, without waiting for it', () => {
    fc.assert(
      fc.property(rewrittenConnection, oversizedFrame, ({ bytes }, big) => {
        expect(runFilter([Buffer.concat([bytes, big])]).closed).toBe(true);
      }),
      { numRuns: 50 },
    );
  });
});

/**
 * A block of few octets whose header list is far larger than the server accepts: one large
 * entry added to the table, then referred to again and again (one octet each).
 */
const amplifyingBlock = (authority: string): fc.Arbitrary<Buffer> =>
  fc
    .tuple(fc.integer({ min: 2000, max: 4000 }), fc.integer({ min: 40, max: 2000 }))
    .map(([length, times]) => {
      const big: BlockItem = {
        kind: 'field',
        field: { name: 'x-big', value: 'v'.repeat(length), sensitive: false },
        how: 'indexed',
        nameByIndex: false,
      };
      const items: BlockItem[] = [
        {
          kind: 'field',
          field: { name: ':authority', value: authority, sensitive: false },
          how: 'without',
          nameByIndex: true,
        },
        ...Array.from({ length: times }, () => big),
      ];
      const { block } = new TestHpackEncoder().encode(items);
      return Buffer.concat(
        headerBlockFrames(block, {
          streamId: 3,
          endStream: false,
          padding: undefined,
          priority: undefined,
          cuts: [],
        }),
      );
    })
    .filter((frames) => frames.length <= 16_000);

/**
 * A HEADERS frame without END_HEADERS and CONTINUATION frames beyond the longest block the largest
 * header list can take (4 octets for every octet it counts: 30-bit Huffman codes).
 */
const endlessBlock: fc.Arbitrary<Buffer> = fc
  .array(fc.integer({ min: 0, max: MAX_FRAME_PAYLOAD }), { minLength: 1, maxLength: 12 })
  .map((sizes) => {
    const frames = [frame(FrameType.HEADERS, 0, 5, Buffer.alloc(MAX_FRAME_PAYLOAD, 0x82))];
    let total = MAX_FRAME_PAYLOAD;
    for (let i = 0; total <= 4 * 65_535; i++) {
      const size = sizes[i % sizes.length]! || 1;
      frames.push(frame(FrameType.CONTINUATION, 0, 5, Buffer.alloc(size, 0x82)));
      total += size;
    }
    return Buffer.concat(frames);
  });

describe('authority rewriter, bounded', () => {
  const rewrittenConnection = connection.filter((c) => c.rewritten);

  it('closes a rewritten connection on a header list larger than the server accepts', () => {
    fc.assert(
      fc.property(rewrittenConnection, amplifyingBlock(''), ({ bytes }, bomb) => {
        expect(runFilter([Buffer.concat([bytes, bomb])]).closed).toBe(true);
      }),
      { numRuns: 30 },
    );
  });

  it('hands such a list over unchanged when it comes first, for the server to refuse', () => {
    fc.assert(
      fc.property(amplifyingBlock('http://127.0.0.1:2379'), (bomb) => {
        const bytes = Buffer.concat([PREFACE, bomb]);
        expectHandedOver(runFilter([bytes]), bytes);
      }),
      { numRuns: 30 },
    );
  });

  it('does not hold a header block beyond what the largest header list can take', () => {
    fc.assert(
      fc.property(rewrittenConnection, endlessBlock, ({ bytes }, endless) => {
        expect(runFilter([Buffer.concat([bytes, endless])]).closed).toBe(true);
        const first = Buffer.concat([PREFACE, endless]);
        expectHandedOver(runFilter([first]), first);
      }),
      { numRuns: 30 },
    );
  });
});

describe('authority rewriter, before it has read a header block', () => {
  it('hands over a frame larger than the server allows at once, for the server to refuse', () => {
    fc.assert(
      fc.property(fc.array(otherFrame, { maxLength: 3 }), oversizedFrame, (before, big) => {
        const bytes = Buffer.concat([PREFACE, ...before, big]);
        expectHandedOver(runFilter([bytes]), bytes);
      }),
      { numRuns: 50 },
    );
  });
});

// The smallest failing cases fast-check found, kept as they were.
describe('authority rewriter, regressions', () => {
  const hex = (text: string) => Buffer.from(text.replaceAll(' ', ''), 'hex');

  it('hands over a single octet that cannot start the preface at once, not after 24 octets', () => {
    expectHandedOver(runFilter([hex('00')]), hex('00'));
  });

  it('keeps a first HEADERS frame whose padding is longer than its payload, and what follows', () => {
    const bytes = Buffer.concat([
      PREFACE,
      // HEADERS, PADDED | END_HEADERS, stream 1, pad length 1 with no room for it.
      hex('000001 01 0c 00000001 01'),
      // HEADERS, END_HEADERS, stream 1: ":authority" with an empty value (static entry 1).
      hex('000001 01 04 00000001 81'),
    ]);
    expectHandedOver(runFilter([bytes]), bytes);
  });

  /** The preface and a first block whose authority has a scheme: the connection is rewritten. */
  const schemeFirst = Buffer.concat([
    PREFACE,
    // HEADERS, END_HEADERS, stream 1: ":authority: http://127.0.0.1:2379", with indexing.
    hex('000022 01 04 00000001 400a'),
    Buffer.from(':authority\x15http://127.0.0.1:2379', 'latin1'),
  ]);

  it('treats the connection below as rewritten', () => {
    const { output, closed } = runFilter([schemeFirst]);
    expect(closed).toBe(false);
    const [headers] = parseFrames(output.subarray(PREFACE.length));
    expect(decodeLiteralsOnly(headers!.payload)).toEqual([
      { name: ':authority', value: '127.0.0.1:2379', sensitive: false },
    ]);
  });

  it('closes a rewritten connection on a PADDED HEADERS frame with no payload at all', () => {
    // Read as an empty block before, and passed on as a valid empty HEADERS frame.
    const bytes = Buffer.concat([schemeFirst, hex('000000 01 0c 00000001')]);
    expect(runFilter([bytes]).closed).toBe(true);
  });

  it('does not wait for the payload of a frame larger than SETTINGS_MAX_FRAME_SIZE', () => {
    // DATA, 16385 octets announced, none sent.
    const big = hex('004001 00 00 00000001');
    const plain = Buffer.concat([PREFACE, big]);
    expectHandedOver(runFilter([plain]), plain);
    expect(runFilter([Buffer.concat([schemeFirst, big])]).closed).toBe(true);
  });

  it('closes a rewritten connection on a block that adds a 2 KiB entry and refers to it 39 times', () => {
    // Before, the 2 KiB-per-octet expansion went to the server re-encoded as literals; a few
    // CONTINUATION frames of such references took gigabytes.
    const value = 'v'.repeat(2000);
    const block = Buffer.concat([
      hex('0100'), // ":authority" without indexing, empty value.
      hex('4005'),
      Buffer.from('x-big', 'latin1'),
      hex('7fd10e'), // Value length 2000 (127 + 1873).
      Buffer.from(value, 'latin1'),
      Buffer.alloc(39, 0xbe), // Index 62, the entry just added.
    ]);
    const bytes = Buffer.concat([
      schemeFirst,
      frame(FrameType.HEADERS, Flag.END_HEADERS, 3, block),
    ]);
    expect(runFilter([bytes]).closed).toBe(true);
  });

  it('stops holding a header block once it is longer than the largest header list can be', () => {
    const frames = [frame(FrameType.HEADERS, 0, 5, Buffer.alloc(MAX_FRAME_PAYLOAD, 0x82))];
    // 17 frames of 16384 octets: more than 4 x 65535.
    for (let i = 0; i < 16; i++) {
      frames.push(frame(FrameType.CONTINUATION, 0, 5, Buffer.alloc(MAX_FRAME_PAYLOAD, 0x82)));
    }
    const bytes = Buffer.concat([PREFACE, ...frames]);
    expectHandedOver(runFilter([bytes]), bytes);
    expect(runFilter([Buffer.concat([schemeFirst, ...frames])]).closed).toBe(true);
  });

  it("hands over a rewritten connection's block with a size update after a field as it came", () => {
    // HEADERS, END_HEADERS, stream 3: ":method: GET", then a size update to 0. It was rewritten,
    // the update dropped, into a valid request.
    const bad = hex('000002 01 04 00000003 82 20');
    const { output, closed } = runFilter([
      Buffer.concat([schemeFirst, bad, hex('000000 04 00 00000000')]),
    ]);
    expect(closed).toBe(false);
    expectBytes(
      output,
      Buffer.concat([runFilter([schemeFirst]).output, bad, hex('000000 04 00 00000000')]),
    );
  });

  it('hands over the part of a frame it held when the client ends, then ends', async () => {
    // Before, the octets held for want of the rest of a frame were never handed over, and the
    // end was passed on without them. DATA, stream 1, 10 octets announced, 4 sent.
    const data = hex('00000a 00 00 00000001 30313233');
    const plain = Buffer.concat([PREFACE, data]);
    expect(await runFilterToEnd([plain])).toEqual({ output: plain, closed: false, ended: true });
    const rewritten = await runFilterToEnd([Buffer.concat([schemeFirst, data])]);
    expect(rewritten.ended).toBe(true);
    expectBytes(rewritten.output, Buffer.concat([runFilter([schemeFirst]).output, data]));
    // A header block cut short on a rewritten connection cannot go over; the end does.
    const open = hex('000001 01 00 00000003 82');
    expect(await runFilterToEnd([Buffer.concat([schemeFirst, open])])).toEqual({
      output: runFilter([schemeFirst]).output,
      closed: false,
      ended: true,
    });
  });

  it('hands over a cut block with a size update after a field as it came, when the client ends', async () => {
    // HEADERS, stream 3, 5 octets announced, 3 sent: ":method: GET", an update to 0, ":path: /".
    // The server would refuse it as it arrived; holding it back would hide that.
    const cut = hex('000005 01 00 00000003 82 20 84');
    const { output, closed, ended } = await runFilterToEnd([Buffer.concat([schemeFirst, cut])]);
    expect({ closed, ended }).toEqual({ closed: false, ended: true });
    expectBytes(output, Buffer.concat([runFilter([schemeFirst]).output, cut]));
  });

  it('closes a rewritten connection on a table size update above SETTINGS_HEADER_TABLE_SIZE', () => {
    // 0x3f e1 1f: size update to 31 + 4066 = 4097.
    const bytes = Buffer.concat([
      schemeFirst,
      frame(FrameType.HEADERS, Flag.END_HEADERS, 3, hex('3fe21f')),
    ]);
    expect(runFilter([bytes]).closed).toBe(true);
  });
});
