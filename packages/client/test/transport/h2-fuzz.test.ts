// Property-based fuzzing of what reads the peer's bytes: the HPACK decoder and the connection
// core's frame loop under the client role (the server role: server-embedded's test/net/h2/
// fuzz.test.ts). Whatever arrives, nothing throws but the typed errors, the connection either goes
// on or ends with a protocol error of its own words (never a defect's), and what was encoded
// decodes to what it was.
import { duplexPair } from 'node:stream';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import {
  encodeLiterals,
  FRAME_SETTINGS,
  frameOf,
  H2ProtocolError,
  HeaderBlockDecoder,
  type HeaderField,
  HpackError,
  HuffmanError,
  headerFrames,
  settingsFrame,
} from '../../src/transport/h2/index.js';
import { H2Connection } from '../../src/transport/h2-connection.js';
import { streamEvents } from './stream-events.js';

const tick = () => new Promise((resolve) => setImmediate(resolve));

/** Header fields as gRPC sends them: lower-case names, printable values. */
const fieldsArb = fc.array(
  fc.record({
    name: fc.stringMatching(/^[a-z][a-z0-9-]{0,30}$/),
    value: fc.stringMatching(/^[ -~]{0,300}$/),
    sensitive: fc.boolean(),
  }),
  { maxLength: 20 },
);

/** A frame of any type and flags on a small stream id, with a payload of up to 300 octets. */
const frameArb = fc
  .record({
    type: fc.integer({ min: 0, max: 12 }),
    flags: fc.integer({ min: 0, max: 255 }),
    streamId: fc.integer({ min: 0, max: 7 }),
    payload: fc.uint8Array({ maxLength: 300 }),
  })
  .map(({ type, flags, streamId, payload }) =>
    frameOf(type, flags, streamId, Buffer.from(payload)),
  );

describe('HPACK decoding of random bytes', () => {
  it('throws nothing but HpackError and HuffmanError', () => {
    fc.assert(
      fc.property(fc.array(fc.uint8Array({ maxLength: 200 }), { maxLength: 4 }), (blocks) => {
        const decoder = new HeaderBlockDecoder();
        for (const block of blocks) {
          try {
            decoder.decode(block);
          } catch (error) {
            expect(error instanceof HpackError || error instanceof HuffmanError).toBe(true);
          }
        }
      }),
      { numRuns: 2000 },
    );
  });

  it('decodes encoded fields to the same fields, block after block', () => {
    fc.assert(
      fc.property(fc.array(fieldsArb, { maxLength: 4 }), (blocks) => {
        const decoder = new HeaderBlockDecoder(4096, 1024 * 1024);
        for (const fields of blocks) {
          expect(decoder.decode(encodeLiterals(fields))).toEqual(fields);
        }
      }),
    );
  });
});

/** A client connection fed the server's SETTINGS, then `chunks`; how it ended, if it did. */
async function feedClient(chunks: readonly Buffer[], streams = 0) {
  const [client, server] = duplexPair();
  server.on('data', () => {});
  let closed: { error: Error | undefined } | undefined;
  const connection = new H2Connection(
    client,
    { scheme: 'http', authority: 'localhost', contentType: 'application/grpc', userAgent: 't' },
    {
      onReady: () => {},
      onGoaway: () => {},
      onClose: (error) => {
        closed = { error };
      },
    },
  );
  server.write(settingsFrame([]));
  await tick();
  const events = streamEvents();
  for (let i = 0; i < streams; i++) connection.request('/p', [], events, [], false);
  for (const chunk of chunks) {
    server.write(chunk);
    await tick();
  }
  await tick();
  connection.destroy();
  return { closed, connection };
}

/** A connection ended by the peer's bytes, in words of its own: never by a defect. */
function endedByProtocol(closed: { error: Error | undefined } | undefined): void {
  if (closed?.error === undefined) return;
  const { message, cause } = closed.error;
  if (message.startsWith('HTTP/2 protocol error: ')) {
    expect(cause).toBeInstanceOf(H2ProtocolError);
    // An unexpected error is wrapped with its cause: there must be none.
    expect((cause as H2ProtocolError).cause).toBeUndefined();
  } else {
    expect(message).toMatch(/^(Session closed with error code \d+|the connection closed)$/);
  }
}

describe("the client's frame loop on random input", () => {
  it('ends random bytes with a protocol error or goes on, whatever the cuts', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.uint8Array({ minLength: 1, maxLength: 200 }), { maxLength: 5 }),
        async (chunks) => {
          const { closed } = await feedClient(
            chunks.map((chunk) => Buffer.from(chunk)),
            2,
          );
          endedByProtocol(closed);
        },
      ),
      { numRuns: 300 },
    );
  });

  it('ends well-formed frames of random types, flags and payloads likewise', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(frameArb, { maxLength: 12 }), async (frames) => {
        const { closed } = await feedClient([Buffer.concat(frames)], 3);
        endedByProtocol(closed);
      }),
      { numRuns: 500 },
    );
  });

  it('reassembles a header block cut into HEADERS and CONTINUATION anywhere', async () => {
    await fc.assert(
      fc.asyncProperty(
        fieldsArb,
        fc.integer({ min: 1024, max: 16_384 }),
        fc.integer({ min: 1, max: 64 }),
        async (fields, maxFrame, cut) => {
          const status: HeaderField = { name: ':status', value: '200', sensitive: false };
          const block = encodeLiterals([status, ...fields]);
          const frames = Buffer.concat(
            headerFrames({ streamId: 1, endStream: false, priority: undefined }, block, maxFrame),
          );
          const chunks: Buffer[] = [];
          for (let at = 0; at < frames.length; at += cut * 97) {
            chunks.push(frames.subarray(at, at + cut * 97));
          }
          const [client, server] = duplexPair();
          server.on('data', () => {});
          const heard: unknown[] = [];
          const connection = new H2Connection(
            client,
            { scheme: 'http', authority: 'a', contentType: 'application/grpc', userAgent: 't' },
            { onReady: () => {}, onGoaway: () => {}, onClose: () => {} },
          );
          server.write(frameOf(FRAME_SETTINGS, 0, 0, Buffer.alloc(0)));
          await tick();
          connection.request(
            '/p',
            [],
            streamEvents({ onHeaders: (headers) => heard.push(headers) }),
            [],
            false,
          );
          for (const chunk of chunks) {
            server.write(chunk);
            await tick();
          }
          await tick();
          const expected: Record<string, string | string[] | number> = { ':status': 200 };
          for (const { name, value } of fields) {
            const seen = expected[name];
            if (seen === undefined) expected[name] = value;
            else if (Array.isArray(seen)) seen.push(value);
            else expected[name] = [String(seen), value];
          }
          expect(heard).toEqual([expected]);
          expect(connection.destroyed).toBe(false);
          connection.destroy();
        },
      ),
      { numRuns: 100 },
    );
  });
});
