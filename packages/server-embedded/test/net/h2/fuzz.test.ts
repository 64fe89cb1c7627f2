// Property-based fuzzing of the connection core's frame loop under the server role (the client
// role and HPACK: the client's test/transport/h2-fuzz.test.ts). After a valid preface, whatever
// arrives ends the connection with a protocol error of the core's own words (never a defect's,
// which would carry a cause) or leaves it serving; a request's header block cut anywhere into
// HEADERS and CONTINUATION frames reaches the server as the fields it was made of.
import type { Socket } from 'node:net';
import { duplexPair } from 'node:stream';
import {
  encodeLiterals,
  frameOf,
  type H2ProtocolError,
  type HeaderField,
  headerFrames,
  PREFACE,
  settingsFrame,
  WriteOrder,
} from '@etcdkit/client/h2';
import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { type ConnectionEvents, H2ServerConnection } from '../../../src/net/h2/connection.js';

const tick = () => new Promise((resolve) => setImmediate(resolve));

/** A server connection that records the connection errors it ends with. */
class Recorded extends H2ServerConnection {
  readonly errors: H2ProtocolError[] = [];

  protected override connectionError(error: H2ProtocolError): void {
    this.errors.push(error);
    super.connectionError(error);
  }
}

/** A server connection over one end of an in-memory pair; the requests it was given. */
function serverPair() {
  const [near, far] = duplexPair();
  far.on('data', () => {});
  far.on('error', () => {});
  const socket = Object.assign(near, { setNoDelay: () => near }) as unknown as Socket;
  const requests: HeaderField[][] = [];
  const events: ConnectionEvents = {
    stream(stream, fields) {
      requests.push(fields);
      stream.sink = {
        streamData: () => {},
        streamEnd: () => {},
        streamReset: () => {},
        streamDrain: () => {},
      };
    },
    close: () => {},
  };
  const connection = new Recorded(socket, events, {}, new WriteOrder());
  return { connection, peer: far, requests };
}

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

/** Every error is one the core raised for the peer's bytes, not a wrapped defect. */
function onlyProtocolErrors(errors: readonly H2ProtocolError[]): void {
  for (const error of errors) {
    expect(error.name).toBe('H2ProtocolError');
    expect(error.cause).toBeUndefined();
  }
}

describe("the server's frame loop on random input", () => {
  it('ends random bytes after the preface with a protocol error or goes on', async () => {
    await fc.assert(
      fc.asyncProperty(
        fc.array(fc.uint8Array({ minLength: 1, maxLength: 200 }), { maxLength: 5 }),
        async (chunks) => {
          const { connection, peer } = serverPair();
          peer.write(Buffer.concat([PREFACE, settingsFrame([])]));
          for (const chunk of chunks) {
            peer.write(Buffer.from(chunk));
            await tick();
          }
          await tick();
          onlyProtocolErrors(connection.errors);
          connection.destroy();
        },
      ),
      { numRuns: 300 },
    );
  });

  it('ends well-formed frames of random types, flags and payloads likewise', async () => {
    await fc.assert(
      fc.asyncProperty(fc.array(frameArb, { maxLength: 12 }), async (frames) => {
        const { connection, peer } = serverPair();
        peer.write(Buffer.concat([PREFACE, settingsFrame([]), ...frames]));
        await tick();
        await tick();
        onlyProtocolErrors(connection.errors);
        connection.destroy();
      }),
      { numRuns: 500 },
    );
  });

  it('hands over a request header block cut into frames and chunks anywhere', async () => {
    const fieldsArb = fc.array(
      fc.record({
        name: fc.stringMatching(/^[a-z][a-z0-9-]{0,30}$/),
        value: fc.stringMatching(/^[ -~]{0,300}$/),
        sensitive: fc.boolean(),
      }),
      { maxLength: 20 },
    );
    await fc.assert(
      fc.asyncProperty(
        fieldsArb,
        fc.integer({ min: 1024, max: 16_384 }),
        fc.integer({ min: 1, max: 200 }),
        async (fields, maxFrame, cut) => {
          const { connection, peer, requests } = serverPair();
          const block = encodeLiterals(fields);
          const bytes = Buffer.concat([
            PREFACE,
            settingsFrame([]),
            ...headerFrames({ streamId: 1, endStream: true, priority: undefined }, block, maxFrame),
          ]);
          for (let at = 0; at < bytes.length; at += cut) {
            peer.write(bytes.subarray(at, at + cut));
          }
          await tick();
          await tick();
          expect(connection.errors).toEqual([]);
          expect(requests).toEqual([fields]);
          connection.destroy();
        },
      ),
      { numRuns: 100 },
    );
  });
});
