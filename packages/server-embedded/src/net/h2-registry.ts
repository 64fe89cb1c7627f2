// The service registry on the server's own HTTP/2 layer (net/h2): each handler becomes a route
// that decodes the request with the generated codec, passes the call gate and any middleware
// (call-middleware.ts) and answers as grpc-js's server does. A unary call arriving while no layer
// would touch it skips their bookkeeping.
import type { MethodDescriptor } from '@etcdkit/client/protocol';
import { encodeResponse } from '../api/response-encoding.js';
import { GrpcCode } from '../errors.js';
import { type CallGate, GatedCall } from '../faults/call-gate.js';
import {
  type BidiHandler,
  type ServerStreamHandler,
  type ServiceRegistry,
  type StreamSend,
  toStatus,
  type UnaryHandler,
  unimplementedStatus,
  type WaitingUnaryHandler,
} from '../services/registry.js';
import {
  type CallMiddleware,
  type CallSteps,
  type MiddlewareStatus,
  stackLayers,
} from './call-middleware.js';
import { type Routes, type ServerCall, StatusError } from './h2/routes.js';
import { H2BidiStream } from './h2-bidi-stream.js';
import { H2CallInfo } from './h2-call-info.js';

/** A handler's failure as the status its call ends with (what grpc-js sends for it). */
export function failureStatus(error: unknown): StatusError {
  if (error instanceof StatusError) return error;
  const status = toStatus(error);
  return new StatusError(status.code, status.details);
}

function statusError(status: MiddlewareStatus): StatusError {
  return new StatusError(status.code, status.details);
}

/** Decodes a request as grpc-js's deserializer would fail it. */
function decode<Req>(method: MethodDescriptor<Req, unknown>, bytes: Buffer): Req {
  try {
    return method.request.decode(bytes);
  } catch {
    throw new StatusError(GrpcCode.INTERNAL, 'Error deserializing request');
  }
}

/** The call's arrival, then its one request decoded and received, through `layers`. */
function admitRequest<Req>(
  layers: CallSteps,
  method: MethodDescriptor<Req, unknown>,
  bytes: Buffer,
  fail: (error: unknown) => void,
  next: (request: Req) => void,
): void {
  layers.arrive(() => {
    let request: Req;
    try {
      request = decode(method, bytes);
    } catch (error) {
      fail(error);
      return;
    }
    layers.receive(request, () => next(request));
  });
}

function encode<Res>(method: MethodDescriptor<unknown, Res>, response: unknown): Uint8Array {
  try {
    return (
      encodeResponse(method.path, response) ?? method.response.encode(response as Res).finish()
    );
  } catch {
    throw new StatusError(GrpcCode.INTERNAL, 'Error serializing response');
  }
}

/** Handler registration on one table of net/h2 routes, behind `gate` and then `middleware`. */
export class H2Registry implements ServiceRegistry {
  readonly #routes: Routes;
  readonly #gate: CallGate;
  readonly #middleware: readonly CallMiddleware[];
  readonly #registered = new Set<string>();

  constructor(routes: Routes, gate: CallGate, middleware: readonly CallMiddleware[] = []) {
    this.#routes = routes;
    this.#gate = gate;
    this.#middleware = middleware;
  }

  unary<Req, Res>(
    method: MethodDescriptor<Req, Res, 'unary'>,
    handler: UnaryHandler<Req, Res>,
  ): void {
    this.#answerOnce(method, (request, bytes, call) =>
      handler(request, bytes, new H2CallInfo(call)),
    );
  }

  waitingUnary<Req, Res>(
    method: MethodDescriptor<Req, Res, 'unary'>,
    handler: WaitingUnaryHandler<Req, Res>,
  ): void {
    this.#answerOnce(method, (request, bytes, call) =>
      handler(request, bytes, call.signal, new H2CallInfo(call)),
    );
  }

  serverStream<Req, Res>(
    method: MethodDescriptor<Req, Res, 'server-stream'>,
    handler: ServerStreamHandler<Req, Res>,
  ): void {
    this.#registered.add(method.path);
    this.#routes.serverStream(method.path, (bytes, call) => {
      // The handler also stops when a layer answers the call in its place.
      const answered = new AbortController();
      const layers = this.#layers(method.path, true, call, (status) => {
        call.end(status.code, status.details);
        answered.abort(statusError(status));
      });
      const signal = AbortSignal.any([call.signal, answered.signal]);
      const fail = (error: unknown): void => {
        if (call.ended) return;
        const status = failureStatus(error);
        layers.sendStatus(() => call.end(status.code, status.details));
      };
      admitRequest(layers, method, bytes, fail, (request) => {
        const send: StreamSend<Res> = (message) =>
          new Promise((resolve, reject) => {
            const frame = encode(method, message);
            layers.sendMessage(() => {
              if (call.ended) reject(new Error('stream cancelled'));
              else if (call.write(frame)) resolve();
              else
                call.onDrain(() =>
                  call.ended ? reject(new Error('stream cancelled')) : resolve(),
                );
            });
          });
        let running: Promise<void>;
        try {
          running = handler(request, send, new H2CallInfo(call), signal);
        } catch (error) {
          running = Promise.reject(error);
        }
        running.then(() => layers.sendStatus(() => call.end()), fail);
      });
    });
  }

  bidi<Req, Res>(
    method: MethodDescriptor<Req, Res, 'bidi-stream'>,
    handler: BidiHandler<Req, Res>,
  ): void {
    this.#registered.add(method.path);
    this.#routes.bidi(method.path, (call) => {
      let stream: H2BidiStream<Req, Res> | undefined;
      const layers = this.#layers(method.path, true, call, (status) => {
        call.end(status.code, status.details);
        stream?.answered();
      });
      layers.arrive(() => {
        stream = new H2BidiStream(call, method, layers);
        handler(stream);
      });
    });
  }

  unimplemented(service: Record<string, MethodDescriptor<unknown, unknown>>): void {
    for (const method of Object.values(service)) {
      if (this.#registered.has(method.path)) continue;
      const { code, details } = unimplementedStatus(method.path);
      const refuse = (call: ServerCall): void => {
        const layers = this.#layers(method.path, true, call, (status) =>
          call.end(status.code, status.details),
        );
        layers.arrive(() => layers.sendStatus(() => call.end(code, details)));
      };
      if (method.kind === 'unary')
        this.#routes.unary(method.path, (_bytes, call) => this.#refused(call, code, details));
      else if (method.kind === 'server-stream')
        this.#routes.serverStream(method.path, (_bytes, call) => refuse(call));
      else this.#routes.bidi(method.path, refuse);
    }
  }

  #refused(call: ServerCall, code: GrpcCode, details: string): Promise<Uint8Array> {
    return new Promise((_resolve, reject) => {
      const layers = this.#layers(call.path, false, call, (status) => reject(statusError(status)));
      layers.arrive(() => layers.sendStatus(() => reject(new StatusError(code, details))));
    });
  }

  /**
   * The layers `call` passes: the call gate, then the middleware. `answer` ends the call with a
   * layer's own status; the layers then learn the call is over, as they do when its signal aborts.
   */
  #layers(
    path: string,
    streaming: boolean,
    call: ServerCall,
    answer: (status: MiddlewareStatus) => void,
  ): CallSteps {
    const gated = new GatedCall(this.#gate, path, answer);
    if (this.#middleware.length === 0) return gated;
    let over = false;
    const arrival = { path, streaming, metadata: call.metadata };
    const layers: CallSteps = stackLayers(gated, this.#middleware, arrival, (status) => {
      answer(status);
      ended();
    });
    const ended = (): void => {
      if (over) return;
      over = true;
      layers.cancelled();
    };
    call.signal.addEventListener('abort', ended, { once: true });
    return layers;
  }

  /** True when a unary call arriving now passes the gate and every middleware untouched. */
  #admitsAtOnce(): boolean {
    if (!this.#gate.admitsAtOnce()) return false;
    for (const middleware of this.#middleware) if (!middleware.admitsAtOnce()) return false;
    return true;
  }

  /** A unary route: decode, the layers, the handler, the response or its failure as a status. */
  #answerOnce<Req, Res>(
    method: MethodDescriptor<Req, Res, 'unary'>,
    serve: (request: Req, bytes: number, call: ServerCall) => unknown,
  ): void {
    this.#registered.add(method.path);
    this.#routes.unary(method.path, (bytes, call) => {
      if (!this.#admitsAtOnce()) return this.#answerGated(method, serve, bytes, call);
      let result: unknown;
      try {
        result = serve(decode(method, bytes), bytes.length, call);
      } catch (error) {
        throw failureStatus(error);
      }
      if (result instanceof Promise) {
        return result.then(
          (response: unknown) => this.#leave(encode(method, response)),
          (error: unknown) => Promise.reject(failureStatus(error)),
        );
      }
      return this.#leave(encode(method, result));
    });
  }

  /** The response, once the gate lets responses out (the data dir's barrier). */
  #leave(frame: Uint8Array): Uint8Array | Promise<Uint8Array> {
    const wait = this.#gate.outbound();
    if (wait === undefined) return frame;
    return wait.then(
      () => frame,
      () => Promise.reject(statusError(this.#gate.durabilityFailed)),
    );
  }

  #answerGated<Req, Res>(
    method: MethodDescriptor<Req, Res, 'unary'>,
    serve: (request: Req, bytes: number, call: ServerCall) => unknown,
    bytes: Buffer,
    call: ServerCall,
  ): Promise<Uint8Array> {
    return new Promise((resolve, reject) => {
      const layers = this.#layers(method.path, false, call, (status) =>
        reject(statusError(status)),
      );
      const fail = (error: unknown): void => {
        const status = failureStatus(error);
        layers.sendStatus(() => reject(status));
      };
      admitRequest(layers, method, bytes, fail, (request) => {
        let result: unknown;
        try {
          result = serve(request, bytes.length, call);
        } catch (error) {
          fail(error);
          return;
        }
        Promise.resolve(result).then((response) => {
          let frame: Uint8Array;
          try {
            frame = encode(method, response);
          } catch (error) {
            fail(error);
            return;
          }
          layers.sendMessage(() => layers.sendStatus(() => resolve(frame)));
        }, fail);
      });
    });
  }
}
