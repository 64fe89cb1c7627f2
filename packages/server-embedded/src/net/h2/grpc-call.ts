// One gRPC call on one stream of the server's own HTTP/2 connection: the request's messages read
// from its DATA, the handler run, the response written as grpc-js's server writes it (headers,
// messages, trailers; trailers only when it ends before any message), with its deadline and
// cancellation. A unary response is written in one go, so it leaves in one socket write.
import type { Socket } from 'node:net';
import { type PeerCertificate, TLSSocket } from 'node:tls';
import { encodeMessage, GrpcMessageError, type HeaderField } from '@etcdkit/client/h2';
import { GrpcCode } from '../../errors.js';
import { NOT_METADATA, PRINTABLE_ASCII } from '../grpc-request.js';
import { RequestMessageReader } from './message-reader.js';
import { RESPONSE_HEADERS, trailersBlock, trailersOnlyBlock } from './response-headers.js';
import {
  type BidiCall,
  type CallMetadata,
  type Route,
  StatusError,
  statusOfFailure,
} from './routes.js';
import type { H2Stream, StreamSink } from './stream.js';

/** The request as the server read it from the stream's headers. */
export interface CallStart {
  readonly path: string;
  readonly route: Route;
  readonly fields: readonly HeaderField[];
  readonly socket: Socket;
  readonly timeoutMs: number | undefined;
  readonly encoding: string;
  readonly maxReceiveBytes: number;
}

/** A request's metadata straight from its header fields. */
class FieldMetadata implements CallMetadata {
  readonly #fields: readonly HeaderField[];

  constructor(fields: readonly HeaderField[]) {
    this.#fields = fields;
  }

  get(key: string): (string | Buffer)[] {
    const name = key.toLowerCase();
    if (name.startsWith(':') || NOT_METADATA.has(name)) return [];
    const values: (string | Buffer)[] = [];
    const binary = name.endsWith('-bin');
    for (const field of this.#fields) {
      if (field.name !== name) continue;
      if (binary) {
        // grpc-js splits a binary header's comma-joined values.
        for (const part of field.value.split(',')) values.push(Buffer.from(part, 'base64'));
      } else if (PRINTABLE_ASCII.test(field.value)) {
        // grpc-js drops a text value with octets outside printable ASCII.
        values.push(field.value);
      }
    }
    return values;
  }
}

/** One call, from the stream's side (its sink) and from the handler's (a BidiCall). */
export class GrpcCall implements StreamSink, BidiCall {
  readonly path: string;
  readonly deadline: number | undefined;
  #ended = false;
  #headersSent = false;
  /** The client's half-close, as reported to the handler (after every message before it). */
  #halfClosed = false;
  /** The client ended its side; reported once nothing received before it is held. */
  #remoteEnded = false;
  #paused = false;
  #started = false;
  #request: Buffer | undefined;
  #abort: AbortController | undefined;
  /** Why the call was aborted before anyone asked for the signal. */
  #abortReason: Error | undefined;
  #timer: NodeJS.Timeout | undefined;
  #metadata: FieldMetadata | undefined;
  #drainListeners: (() => void)[] = [];
  #messageListener: ((message: Buffer) => void) | undefined;
  #halfCloseListeners: (() => void)[] = [];
  /** Messages a bidi call received before its handler listened, or while it is paused. */
  #inbox: Buffer[] = [];
  readonly #stream: H2Stream;
  readonly #start: CallStart;
  readonly #reader: RequestMessageReader;

  constructor(stream: H2Stream, start: CallStart) {
    this.#stream = stream;
    this.#start = start;
    this.path = start.path;
    this.#reader = new RequestMessageReader(start.maxReceiveBytes, start.encoding);
    stream.sink = this;
    if (start.timeoutMs !== undefined) {
      this.deadline = Date.now() + start.timeoutMs;
      this.#timer = setTimeout(this.#expire, start.timeoutMs);
    }
    // A bidi handler runs at once; unary and server-stream ones once the request is in.
    if (start.route.kind === 'bidi') this.#run();
  }

  get metadata(): CallMetadata {
    if (this.#metadata === undefined) this.#metadata = new FieldMetadata(this.#start.fields);
    return this.#metadata;
  }

  get peer(): string {
    const { remoteAddress, remotePort } = this.#start.socket;
    if (!remoteAddress) return 'unknown';
    return remotePort ? `${remoteAddress}:${remotePort}` : remoteAddress;
  }

  get peerCertificate(): PeerCertificate | undefined {
    const { socket } = this.#start;
    if (!(socket instanceof TLSSocket) || !socket.authorized) return undefined;
    const certificate = socket.getPeerCertificate();
    return certificate.raw ? certificate : undefined;
  }

  get signal(): AbortSignal {
    // Made when asked for: most unary handlers never look at it.
    if (this.#abort === undefined) {
      this.#abort = new AbortController();
      if (this.#abortReason !== undefined) this.#abort.abort(this.#abortReason);
    }
    return this.#abort.signal;
  }

  get ended(): boolean {
    return this.#ended;
  }

  get halfClosed(): boolean {
    return this.#halfClosed;
  }

  write(message: Uint8Array): boolean {
    if (this.#ended) return false;
    if (!this.#headersSent) {
      this.#headersSent = true;
      this.#stream.respond(RESPONSE_HEADERS, false);
    }
    return this.#stream.write(encodeMessage(message));
  }

  onDrain(listener: () => void): void {
    this.#drainListeners.push(listener);
  }

  end(code: GrpcCode = GrpcCode.OK, message = code === GrpcCode.OK ? 'OK' : ''): void {
    if (this.#ended) return;
    this.#settle();
    if (this.#headersSent) this.#stream.end(trailersBlock(code, message));
    else this.#stream.respond(trailersOnlyBlock(code, message), true);
  }

  onMessage(listener: (message: Buffer) => void): void {
    this.#messageListener = listener;
    this.#flushInbox();
  }

  pause(): void {
    if (this.#paused) return;
    this.#paused = true;
    this.#stream.pauseReceive();
  }

  resume(): void {
    if (!this.#paused) return;
    this.#paused = false;
    this.#flushInbox();
    // A listener may have paused again: then the window stays withheld.
    if (!this.#paused) this.#stream.resumeReceive();
  }

  onHalfClose(listener: () => void): void {
    if (this.#halfClosed) queueMicrotask(listener);
    else this.#halfCloseListeners.push(listener);
  }

  [Symbol.asyncIterator](): AsyncIterator<Buffer> {
    const ready: Buffer[] = [];
    let wake: (() => void) | undefined;
    const wakeUp = (): void => {
      const resolve = wake;
      wake = undefined;
      resolve?.();
    };
    this.onMessage((message) => {
      ready.push(message);
      wakeUp();
    });
    this.onHalfClose(wakeUp);
    this.signal.addEventListener('abort', wakeUp, { once: true });
    return {
      next: async (): Promise<IteratorResult<Buffer>> => {
        for (;;) {
          const message = ready.shift();
          if (message !== undefined) return { value: message, done: false };
          if (this.#halfClosed || this.#abortReason !== undefined) {
            return { value: undefined, done: true };
          }
          await new Promise<void>((resolve) => {
            wake = resolve;
          });
        }
      },
      return: async (): Promise<IteratorResult<Buffer>> => ({ value: undefined, done: true }),
    };
  }

  // StreamSink: what the connection says.

  streamData(chunk: Buffer): void {
    if (this.#ended) return;
    let messages: Buffer[];
    try {
      messages = this.#reader.push(chunk);
    } catch (error) {
      if (error instanceof GrpcMessageError) this.#refuse(error.code as GrpcCode, error.message);
      else throw error;
      return;
    }
    for (const message of messages) {
      if (this.#start.route.kind === 'bidi') this.#deliver(message);
      else if (this.#request === undefined) this.#request = message;
      else {
        this.#refuse(
          GrpcCode.UNIMPLEMENTED,
          `Received a second request message for server streaming method ${this.path}`,
        );
        return;
      }
    }
  }

  streamEnd(): void {
    if (this.#start.route.kind === 'bidi') {
      this.#remoteEnded = true;
      this.#reportHalfClose();
      return;
    }
    if (this.#ended) return;
    // A partial message at the end is dropped, as grpc-js does: no request at all.
    if (this.#request === undefined) {
      this.#refuse(
        GrpcCode.UNIMPLEMENTED,
        `Received no request message for server streaming method ${this.path}`,
      );
      return;
    }
    this.#run();
  }

  streamReset(code: number): void {
    if (this.#ended) return;
    this.#settle();
    this.#aborted(new StatusError(GrpcCode.CANCELLED, `call cancelled (HTTP/2 code ${code})`));
  }

  streamDrain(): void {
    const listeners = this.#drainListeners;
    this.#drainListeners = [];
    for (const listener of listeners) listener();
  }

  #deliver(message: Buffer): void {
    if (this.#messageListener !== undefined && !this.#paused) this.#messageListener(message);
    else this.#inbox.push(message);
  }

  /** Delivers held messages in order, stopping if the listener pauses; then a held half-close. */
  #flushInbox(): void {
    const listener = this.#messageListener;
    if (listener === undefined) return;
    while (!this.#paused && this.#inbox.length > 0) listener(this.#inbox.shift()!);
    this.#reportHalfClose();
  }

  /** The half-close reaches the handler behind every message before it, and not while paused. */
  #reportHalfClose(): void {
    if (!this.#remoteEnded || this.#halfClosed || this.#paused) return;
    if (this.#messageListener !== undefined && this.#inbox.length > 0) return;
    this.#halfClosed = true;
    const listeners = this.#halfCloseListeners;
    this.#halfCloseListeners = [];
    for (const listener of listeners) listener();
  }

  #run(): void {
    if (this.#started) return;
    this.#started = true;
    const { route } = this.#start;
    let result: unknown;
    try {
      if (route.kind === 'unary') result = route.handler(this.#request!, this);
      else if (route.kind === 'server-stream') result = route.handler(this.#request!, this);
      else result = route.handler(this);
    } catch (error) {
      this.#fail(error);
      return;
    }
    if (route.kind === 'unary') {
      if (result instanceof Promise) {
        result.then(this.#answer, (error: unknown) => this.#fail(error));
      } else this.#answer(result as Uint8Array);
    } else if (result instanceof Promise) {
      result.catch((error: unknown) => this.#fail(error));
    }
  }

  readonly #answer = (response: Uint8Array): void => {
    if (this.#ended) return;
    this.write(response);
    this.end();
  };

  #fail(error: unknown): void {
    if (this.#ended) return;
    const { code, details } = statusOfFailure(error);
    this.end(code, details);
  }

  /** Ends the call for what the request broke; the handler, if running, sees the signal. */
  #refuse(code: GrpcCode, message: string): void {
    this.end(code, message);
    this.#aborted(new StatusError(code, message));
  }

  readonly #expire = (): void => {
    this.#timer = undefined;
    if (this.#ended) return;
    this.end(GrpcCode.DEADLINE_EXCEEDED, 'Deadline exceeded');
    this.#aborted(new StatusError(GrpcCode.DEADLINE_EXCEEDED, 'Deadline exceeded'));
  };

  #aborted(reason: Error): void {
    if (this.#abortReason !== undefined) return;
    this.#abortReason = reason;
    this.#abort?.abort(reason);
  }

  #settle(): void {
    this.#ended = true;
    if (this.#timer !== undefined) {
      clearTimeout(this.#timer);
      this.#timer = undefined;
    }
    // Messages held for a paused handler are not delivered once the call is over.
    this.#inbox = [];
    // A handler waiting for room wakes up to find the call over (its writes now return false).
    this.streamDrain();
  }
}
