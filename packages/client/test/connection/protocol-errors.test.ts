// A server that breaks HTTP/2 on every connection (issue 24, item 4): with retries on, the call
// fails at once, not at its deadline, with a ProtocolError whose message and cause name what broke
// (the client's finding, or the server's GOAWAY code and debug text); a server that allows no
// stream at all (SETTINGS_MAX_CONCURRENT_STREAMS 0) fails the call at once too. Run on every
// transport (ETCDKIT_TEST_TRANSPORT).
import { afterEach, expect, it } from 'vitest';
import { Connection } from '../../src/connection/connection.js';
import { OutcomeUnknownError, ProtocolError, WriteNotAppliedError } from '../../src/errors.js';
import { etcdserverpb_KV } from '../../src/generated/methods.js';
import {
  FRAME_SETTINGS,
  frameOf,
  goawayFrame,
  PROTOCOL_ERROR,
} from '../../src/transport/h2/frames.js';
import { type RawScript, type RawServer, startRawServer } from './raw-h2-server.js';

const transport = process.env.ETCDKIT_TEST_TRANSPORT || 'h2';
/**
 * grpc-js shows a call neither the server's GOAWAY (its code by name, its debug text, its last
 * stream) nor the server's SETTINGS: its calls see only "Received RST_STREAM with code N" (the
 * transport names the code), and wait out a concurrency limit of 0. Those cases are the own transports' (h2, http2).
 */
const seesGoaway = transport !== 'grpc-js';
const bytes = (s: string) => new TextEncoder().encode(s);
/** The call's deadline: a failure well before it was not retried until it (long, so load never reaches half). */
const TIMEOUT_MS = 60_000;

let raw: RawServer | undefined;
let conn: Connection | undefined;
afterEach(async () => {
  await conn?.close();
  await raw?.close();
  conn = undefined;
  raw = undefined;
});

/** Every message of an error and of its causes, outermost first. */
function messages(error: unknown): string[] {
  const out: string[] = [];
  for (let e = error; e instanceof Error; e = e.cause) out.push(e.message);
  return out;
}

/** Starts `script` as the only endpoint of a client with the default retry policy. */
async function serve(script: RawScript, maxConcurrentStreams?: number) {
  raw = await startRawServer(script, { maxConcurrentStreams });
  conn = new Connection({ endpoints: [raw.endpoint], callTimeoutMs: TIMEOUT_MS });
  return conn;
}

async function timed<T>(call: Promise<T>): Promise<{ error: unknown; ms: number }> {
  const started = performance.now();
  const error = await call.then(
    () => undefined,
    (e: unknown) => e,
  );
  return { error, ms: performance.now() - started };
}

/** SETTINGS on a stream: a connection error (RFC 9113, 6.5) every client must detect. */
const settingsOnStream: RawScript = (connection, request) =>
  connection.send(frameOf(FRAME_SETTINGS, 0, request.streamId, Buffer.alloc(0)));

it('fails a read at once with a ProtocolError when the server breaks the protocol on every connection', async () => {
  const c = await serve(settingsOnStream);
  const { error, ms } = await timed(c.unary(etcdserverpb_KV.Range, { key: bytes('k') }, 'read'));
  expect(error).toBeInstanceOf(ProtocolError);
  expect((error as ProtocolError).code).toBe('PROTOCOL_ERROR');
  expect((error as Error).message).toMatch(/protocol error/i);
  expect(messages((error as Error).cause).join(' | ')).toMatch(/protocol error/i);
  // Not retried on the endpoint that broke it: one connection, one request, long before the deadline.
  expect(raw!.connections).toBe(1);
  expect(raw!.received).toHaveLength(1);
  expect(ms).toBeLessThan(TIMEOUT_MS / 2);
});

it.skipIf(!seesGoaway)(
  'names the GOAWAY code and debug text of a server that goes away with PROTOCOL_ERROR',
  async () => {
    // The request is processed (last stream = its own), then the server ends with an error.
    const c = await serve((connection, request) => {
      connection.send(goawayFrame(request.streamId, PROTOCOL_ERROR, 'bad request framing'));
      connection.end();
    });
    const { error, ms } = await timed(c.unary(etcdserverpb_KV.Range, { key: bytes('k') }, 'read'));
    expect(error).toBeInstanceOf(ProtocolError);
    expect((error as Error).message).toContain('PROTOCOL_ERROR');
    expect((error as Error).message).toContain('bad request framing');
    expect(messages((error as Error).cause).join(' | ')).toContain('bad request framing');
    expect(raw!.connections).toBe(1);
    expect(ms).toBeLessThan(TIMEOUT_MS / 2);
  },
);

it('reports a write processed before a PROTOCOL_ERROR GOAWAY as OutcomeUnknownError naming it', async () => {
  const c = await serve((connection, request) => {
    connection.send(goawayFrame(request.streamId, PROTOCOL_ERROR, 'bad request framing'));
    connection.end();
  });
  const { error } = await timed(
    c.unary(etcdserverpb_KV.Put, { key: bytes('k'), value: bytes('v') }, 'write'),
  );
  expect(error).toBeInstanceOf(OutcomeUnknownError);
  expect((error as Error).cause).toBeInstanceOf(ProtocolError);
  expect((error as Error).message).toContain(
    seesGoaway ? 'bad request framing' : 'Received RST_STREAM with code 1 (PROTOCOL_ERROR)',
  );
  expect(raw!.received).toHaveLength(1);
});

it.skipIf(!seesGoaway)(
  'reports a write refused by a PROTOCOL_ERROR GOAWAY as WriteNotAppliedError naming it',
  async () => {
    // Last stream 0: the server processed none of the connection's requests.
    const c = await serve((connection) => {
      connection.send(goawayFrame(0, PROTOCOL_ERROR, 'bad request framing'));
      connection.end();
    });
    const { error, ms } = await timed(
      c.unary(etcdserverpb_KV.Put, { key: bytes('k'), value: bytes('v') }, 'write'),
    );
    expect(error).toBeInstanceOf(WriteNotAppliedError);
    expect((error as Error).cause).toBeInstanceOf(ProtocolError);
    expect((error as Error).message).toContain('PROTOCOL_ERROR');
    expect((error as Error).message).toContain('bad request framing');
    expect(raw!.applied).toEqual([]);
    expect(ms).toBeLessThan(TIMEOUT_MS / 2);
  },
);

it.skipIf(!seesGoaway)(
  'fails a call at once when the server allows no stream (SETTINGS_MAX_CONCURRENT_STREAMS 0)',
  async () => {
    const c = await serve((connection, request) => connection.answer(request), 0);
    const { error, ms } = await timed(c.unary(etcdserverpb_KV.Range, { key: bytes('k') }, 'read'));
    expect(error).toBeInstanceOf(ProtocolError);
    expect((error as Error).message).toContain('MAX_CONCURRENT_STREAMS');
    expect(raw!.received).toEqual([]);
    expect(ms).toBeLessThan(TIMEOUT_MS / 2);
  },
);
