// A bidirectional net/h2 call as the services' BidiStream: requests decoded and passed through the
// call's layers (the call gate, any middleware) as 'data' events, responses encoded and passed
// through them on their way out, with the events
// grpc-js's ServerDuplexStream emits ('end', 'cancelled', 'close', 'drain', 'error').
import { EventEmitter } from 'node:events';
import type { MethodDescriptor } from '@etcdkit/client/protocol';
import { encodeResponse } from '../api/response-encoding.js';
import { EncodedMessage } from '../encoded-message.js';
import { GrpcCode } from '../errors.js';
import type { BidiStream, CallInfo, ResponseOf, StatusFailure } from '../services/registry.js';
import type { CallSteps } from './call-middleware.js';
import type { BidiCall } from './h2/routes.js';
import { H2CallInfo } from './h2-call-info.js';

/** One bidirectional call, from its handler's side. */
export class H2BidiStream<Req, Res> extends EventEmitter implements BidiStream<Req, Res> {
  readonly #call: BidiCall;
  readonly #method: MethodDescriptor<Req, Res, 'bidi-stream'>;
  readonly #layers: CallSteps;
  readonly #info: H2CallInfo;
  #closed = false;

  constructor(
    call: BidiCall,
    method: MethodDescriptor<Req, Res, 'bidi-stream'>,
    layers: CallSteps,
  ) {
    super();
    this.#call = call;
    this.#method = method;
    this.#layers = layers;
    this.#info = new H2CallInfo(call);
    // Listeners are added by the handler after this returns: events start on a later tick.
    queueMicrotask(() => {
      call.onMessage((message) => this.#deliver(message));
      call.onHalfClose(() => this.#layers.halfClose(() => this.emit('end')));
      if (call.signal.aborted) this.#cancelled();
      else call.signal.addEventListener('abort', () => this.#cancelled(), { once: true });
    });
  }

  get cancelled(): boolean {
    return this.#call.signal.aborted;
  }

  get metadata(): CallInfo['metadata'] {
    return this.#info.metadata;
  }

  getAuthContext(): ReturnType<CallInfo['getAuthContext']> {
    return this.#info.getAuthContext();
  }

  getPeer(): string {
    return this.#info.getPeer();
  }

  write(message: ResponseOf<Res> | EncodedMessage): boolean {
    if (this.#call.ended) return false;
    const frame =
      message instanceof EncodedMessage
        ? message.bytes
        : (encodeResponse(this.#method.path, message) ??
          this.#method.response.encode(message as Res).finish());
    let written = true;
    this.#layers.sendMessage(() => {
      written = this.#call.write(frame);
      if (!written) this.#call.onDrain(() => this.emit('drain'));
    });
    return written;
  }

  end(): void {
    this.#layers.sendStatus(() => {
      this.#call.end();
      this.#close();
    });
  }

  override emit(event: string | symbol, ...args: unknown[]): boolean {
    if (event !== 'error') return super.emit(event, ...args);
    // As on grpc-js's call: an 'error' emitted by the handler ends the call with its status.
    const status = args[0] as StatusFailure;
    this.#layers.sendStatus(() => {
      this.#call.end(
        (status.code ?? GrpcCode.UNKNOWN) as GrpcCode,
        status.details ?? status.message,
      );
      this.#close();
    });
    return this.listenerCount('error') > 0 ? super.emit('error', status) : false;
  }

  /** Held by the call itself: its stream's receive window stays closed meanwhile. */
  pause(): void {
    this.#call.pause();
  }

  resume(): void {
    this.#call.resume();
  }

  /** A layer answered the call in the handler's place: the handler hears of it as of a cancel. */
  answered(): void {
    this.#cancelled();
  }

  #deliver(message: Buffer): void {
    let request: Req;
    try {
      request = this.#method.request.decode(message);
    } catch {
      this.#call.end(GrpcCode.INTERNAL, 'Error deserializing request');
      this.#close();
      return;
    }
    this.#layers.receive(request, () => this.emit('data', request));
  }

  #cancelled(): void {
    if (this.#closed) return;
    this.emit('cancelled');
    this.#close();
  }

  #close(): void {
    if (this.#closed) return;
    this.#closed = true;
    queueMicrotask(() => super.emit('close'));
  }
}
