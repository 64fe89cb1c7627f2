// Registers handlers on a @grpc/grpc-js server straight from the generated method table, with the
// generated codecs, and turns thrown EtcdServerErrors into their gRPC status and message. Methods
// of a service that have no handler answer Unimplemented.
import type { MethodDescriptor, MethodKind } from '@etcdkit/client/protocol';
import type * as grpc from '@grpc/grpc-js';
import { EtcdServerError, GrpcCode } from '../errors.js';

/** What a handler may return: any subset of the response's fields (unset ones are defaults). */
export type ResponseOf<Res> = { [K in keyof Res]?: Res[K] | null };

/**
 * The call a handler serves, for what the request itself does not say: its metadata (the auth
 * token), its TLS peer (a client certificate) and whether the client cancelled it.
 */
export type CallInfo = Pick<
  grpc.ServerUnaryCall<unknown, unknown>,
  'cancelled' | 'getAuthContext' | 'getPeer'
> & {
  /** The request's metadata; only its values are read (see unary-fast-path.ts). */
  readonly metadata: Pick<grpc.Metadata, 'get'>;
};

/** A unary handler; `requestBytes` is the size of the request as received. */
export type UnaryHandler<Req, Res> = (
  request: Req,
  requestBytes: number,
  call: CallInfo,
) => ResponseOf<Res> | Promise<ResponseOf<Res>>;

/**
 * A unary handler that may wait for a long time (Lock, Campaign). `signal` aborts when the call
 * ends without an answer: the client cancelled it, its deadline passed or its connection dropped.
 */
export type WaitingUnaryHandler<Req, Res> = (
  request: Req,
  requestBytes: number,
  signal: AbortSignal,
  call: CallInfo,
) => Promise<ResponseOf<Res>>;

/** Writes one message of a response stream; resolves once it may send the next (backpressure). */
export type StreamSend<Res> = (message: ResponseOf<Res>) => Promise<void>;

/**
 * A server-streaming handler: sends messages, then returns (or throws to end with an error).
 * `signal` aborts when the client cancels the stream or its connection drops.
 */
export type ServerStreamHandler<Req, Res> = (
  request: Req,
  send: StreamSend<Res>,
  call: CallInfo,
  signal: AbortSignal,
) => Promise<void>;

/**
 * A bidirectional-streaming handler. It gets the raw call: it reads requests as they come and writes
 * responses itself, so it can honour the call's backpressure (write() returning false, 'drain').
 */
export type BidiHandler<Req, Res> = (call: grpc.ServerDuplexStream<Req, ResponseOf<Res>>) => void;

type Handler<Req, Res> =
  | grpc.handleUnaryCall<Req, Res>
  | grpc.handleServerStreamingCall<Req, Res>
  | grpc.handleClientStreamingCall<Req, Res>
  | grpc.handleBidiStreamingCall<Req, Res>;

// The size each decoded request had on the wire, recorded by the deserializer.
const requestSizes = new WeakMap<object, number>();

const grpcTypes: Record<MethodKind, string> = {
  unary: 'unary',
  'server-stream': 'serverStream',
  'client-stream': 'clientStream',
  'bidi-stream': 'bidi',
};

/** A gRPC status for anything a handler throws. */
export function toStatus(error: unknown): grpc.ServerErrorResponse {
  if (error instanceof EtcdServerError) {
    return Object.assign(new Error(error.message), {
      code: error.grpcCode,
      details: error.message,
    });
  }
  // Like grpc-go for a plain error: status Unknown with the error's text.
  const message = error instanceof Error ? error.message : String(error);
  return Object.assign(new Error(message), { code: GrpcCode.UNKNOWN, details: message });
}

/** Where unary handlers are also served without grpc-js (net/unary-fast-path.ts implements it). */
export interface UnaryRoute {
  add<Req, Res>(method: MethodDescriptor<Req, Res, 'unary'>, handler: UnaryHandler<Req, Res>): void;
}

/** Handler registration on one grpc-js server. */
export class ServiceRegistry {
  private readonly server: grpc.Server;
  private readonly registered = new Set<string>();
  private readonly fastPath: UnaryRoute | undefined;

  /** `fastPath`: where unary handlers are also served without grpc-js, if anywhere. */
  constructor(server: grpc.Server, fastPath?: UnaryRoute) {
    this.server = server;
    this.fastPath = fastPath;
  }

  unary<Req, Res>(
    method: MethodDescriptor<Req, Res, 'unary'>,
    handler: UnaryHandler<Req, Res>,
  ): void {
    this.fastPath?.add(method, handler);
    this.register(
      method,
      (call: grpc.ServerUnaryCall<Req, Res>, callback: grpc.sendUnaryData<Res>) => {
        const request = call.request;
        let result: ResponseOf<Res> | Promise<ResponseOf<Res>>;
        try {
          result = handler(request, requestSizes.get(request as object) ?? 0, call);
        } catch (error) {
          callback(toStatus(error));
          return;
        }
        Promise.resolve(result).then(
          (response) => callback(null, response as Res),
          (error: unknown) => callback(toStatus(error)),
        );
      },
    );
  }

  serverStream<Req, Res>(
    method: MethodDescriptor<Req, Res, 'server-stream'>,
    handler: ServerStreamHandler<Req, Res>,
  ): void {
    this.register(method, (call: grpc.ServerWritableStream<Req, Res>) => {
      const send: StreamSend<Res> = (message) =>
        new Promise((resolve, reject) => {
          if (call.cancelled) {
            reject(new Error('stream cancelled'));
            return;
          }
          call.write(message as Res, (error?: Error | null) => (error ? reject(error) : resolve()));
        });
      const cancelled = new AbortController();
      const onCancelled = (): void => cancelled.abort(new Error('the call was cancelled'));
      call.once('cancelled', onCancelled);
      if (call.cancelled) onCancelled();
      handler(call.request, send, call, cancelled.signal).then(
        () => call.end(),
        (error: unknown) => {
          if (!call.cancelled) call.emit('error', toStatus(error));
        },
      );
    });
  }

  /** Registers a {@link WaitingUnaryHandler}: a unary call that learns when it is cancelled. */
  waitingUnary<Req, Res>(
    method: MethodDescriptor<Req, Res, 'unary'>,
    handler: WaitingUnaryHandler<Req, Res>,
  ): void {
    this.register(
      method,
      (call: grpc.ServerUnaryCall<Req, Res>, callback: grpc.sendUnaryData<Res>) => {
        const cancelled = new AbortController();
        const onCancelled = (): void => cancelled.abort(new Error('the call was cancelled'));
        call.once('cancelled', onCancelled);
        if (call.cancelled) onCancelled();
        const request = call.request;
        const answer = (error: unknown, response?: ResponseOf<Res>): void => {
          call.off('cancelled', onCancelled);
          if (error === undefined) callback(null, response as Res);
          else callback(toStatus(error));
        };
        // A handler that throws before returning its promise still gets a status back.
        new Promise<ResponseOf<Res>>((resolve) =>
          resolve(
            handler(request, requestSizes.get(request as object) ?? 0, cancelled.signal, call),
          ),
        ).then(
          (response) => answer(undefined, response),
          (error: unknown) => answer(error ?? new Error('unknown error')),
        );
      },
    );
  }

  bidi<Req, Res>(
    method: MethodDescriptor<Req, Res, 'bidi-stream'>,
    handler: BidiHandler<Req, Res>,
  ): void {
    // The call only ever sees what the handler writes, which the encoder takes as it does for
    // unary responses (a subset of the fields).
    this.register(method, handler as unknown as grpc.handleBidiStreamingCall<Req, Res>);
  }

  /** Answers every method of `service` that has no handler yet with Unimplemented. */
  unimplemented(service: Record<string, MethodDescriptor<unknown, unknown>>): void {
    for (const method of Object.values(service)) {
      if (this.registered.has(method.path)) continue;
      const status = {
        code: GrpcCode.UNIMPLEMENTED,
        details: `${method.path} is not implemented by the embedded etcd server yet`,
      };
      const answersOnce = method.kind === 'unary' || method.kind === 'client-stream';
      const handler: Handler<unknown, unknown> = answersOnce
        ? (_call: unknown, callback: grpc.sendUnaryData<unknown>) => callback(status)
        : (call: grpc.ServerWritableStream<unknown, unknown>) => call.emit('error', status);
      this.register(method, handler);
    }
  }

  private register<Req, Res>(method: MethodDescriptor<Req, Res>, handler: Handler<Req, Res>): void {
    this.registered.add(method.path);
    this.server.register<Req, Res>(
      method.path,
      handler,
      // The handlers build plain objects with a subset of the fields; the generated encoders accept
      // them and skip proto3 defaults exactly as Go does.
      (response) => Buffer.from(method.response.encode(response).finish()),
      (bytes) => {
        const request = method.request.decode(bytes);
        requestSizes.set(request as object, bytes.length);
        return request;
      },
      grpcTypes[method.kind],
    );
  }
}
