// A toy service on the server's own HTTP/2 layer, on 127.0.0.1 and an ephemeral port, for the
// tests that reach it with node:http2, grpc-js and etcdkit's own transport.
import { GrpcCode } from '../../../src/errors.js';
import { type BidiCall, Routes, type ServerCall, StatusError } from '../../../src/net/h2/routes.js';
import { H2GrpcServer, type H2GrpcServerOptions } from '../../../src/net/h2/server.js';

/** What the handlers saw, for the tests to assert on. */
export interface Seen {
  /** Abort reasons of the signals of calls to Hold, in order. */
  aborts: unknown[];
  /** Calls to Hold that are running. */
  held: ServerCall[];
  /** The `token` metadata and peer of each Whoami call. */
  whoami: { token: (string | Buffer)[]; peer: string }[];
  /** Calls to Paused, paused from their start until the test resumes them. */
  paused: BidiCall[];
  /** The messages Paused delivered to its handler, in order. */
  delivered: Buffer[];
}

/** Nothing seen yet. */
export function newSeen(): Seen {
  return { aborts: [], held: [], whoami: [], paused: [], delivered: [] };
}

export const NON_ASCII_MESSAGE = 'schlüssel ✓ 键 100% {ok}';

/** The toy routes. */
export function toyRoutes(seen: Seen): Routes {
  return new Routes()
    .unary('/toy.Echo/Unary', (request) => request)
    .unary('/toy.Echo/Whoami', (_request, call) => {
      seen.whoami.push({ token: call.metadata.get('token'), peer: call.peer });
      return Buffer.from(String(call.metadata.get('token')[0] ?? ''));
    })
    .unary('/toy.Echo/Subject', (_request, call) =>
      Buffer.from(String(call.peerCertificate?.subject.CN ?? 'none')),
    )
    .unary('/toy.Echo/Fail', (request) => {
      throw new StatusError(GrpcCode.FAILED_PRECONDITION, request.toString('utf8'));
    })
    .unary(
      '/toy.Echo/Hold',
      (_request, call) =>
        new Promise<Uint8Array>((resolve) => {
          seen.held.push(call);
          call.signal.addEventListener('abort', () => seen.aborts.push(call.signal.reason));
          // Answered when released by the test (see `release`), or never if aborted first.
          (call as ServerCall & { release?: () => void }).release = () =>
            resolve(Buffer.from('released'));
        }),
    )
    .serverStream('/toy.Echo/Count', (request, call) => {
      const n = Number(request.toString('utf8'));
      for (let i = 0; i < n; i++) call.write(Buffer.from(`message ${i}`));
      call.end();
    })
    .serverStream('/toy.Echo/Repeat', async (request, call) => {
      // Writes the request back 4 times, waiting for room as a well-behaved handler does.
      for (let i = 0; i < 4; i++) {
        if (!call.write(request)) await new Promise<void>((resolve) => call.onDrain(resolve));
      }
      call.end();
    })
    .bidi('/toy.Echo/Paused', (call) => {
      call.pause();
      seen.paused.push(call);
      call.onMessage((message) => seen.delivered.push(message));
      call.onHalfClose(() => {
        call.write(Buffer.from(`got ${seen.delivered.length}`));
        call.end();
      });
    })
    .bidi('/toy.Echo/Chat', async (call) => {
      let count = 0;
      for await (const message of call) {
        count++;
        call.write(Buffer.concat([Buffer.from('echo:'), message]));
      }
      call.write(Buffer.from(`bye after ${count}`));
      call.end();
    });
}

/** Releases a held call with its answer. */
export function release(call: ServerCall): void {
  (call as ServerCall & { release?: () => void }).release?.();
}

/** Starts the toy service; `stop` closes it and every connection. */
export async function startToy(options: Partial<H2GrpcServerOptions> = {}) {
  const seen = newSeen();
  const server = new H2GrpcServer({ routes: toyRoutes(seen), ...options });
  const { port } = await server.listen(0, '127.0.0.1');
  return {
    server,
    seen,
    port,
    target: `127.0.0.1:${port}`,
    stop: () => server.destroy(),
  };
}

/** A gRPC message: the 5-byte prefix and the bytes. */
export function grpcFrame(message: Uint8Array): Buffer {
  const out = Buffer.alloc(5 + message.length);
  out.writeUInt32BE(message.length, 1);
  out.set(message, 5);
  return out;
}

/** The messages in a response body. */
export function grpcMessages(body: Buffer): Buffer[] {
  const messages: Buffer[] = [];
  let offset = 0;
  while (offset + 5 <= body.length) {
    const length = body.readUInt32BE(offset + 1);
    messages.push(body.subarray(offset + 5, offset + 5 + length));
    offset += 5 + length;
  }
  return messages;
}

/** Waits until `check` holds (polling), or fails after `ms`. */
export async function until(check: () => boolean, ms = 2000): Promise<void> {
  const end = Date.now() + ms;
  while (!check()) {
    if (Date.now() > end) throw new Error('condition not met in time');
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}
