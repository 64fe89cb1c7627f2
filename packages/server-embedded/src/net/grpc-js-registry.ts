// The service registry on a @grpc/grpc-js server: each handler registered with the generated
// codecs, thrown errors sent as their status, methods without a handler answering Unimplemented.
import type { MethodDescriptor, MethodKind } from '@etcdkit/client/protocol';
import type * as grpc from '@grpc/grpc-js';
import {
  type BidiHandler,
  type ResponseOf,
  type ServerStreamHandler,
  type ServiceRegistry,
  type StreamSend,
  toStatus,
  type UnaryHandler,
  unimplementedStatus,
  type WaitingUnaryHandler,
} from '../services/registry.js';

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

/** Where unary handlers are also served without grpc-js (net/unary-fast-path.ts implements it). */
export interface UnaryRoute {
  add<Req, Res>(method: MethodDescriptor<Req, Res, 'unary'>, handler: UnaryHandler<Req, Res>): void;
}

/** Handler registration on one grpc-js server. */
export class GrpcJsRegistry implements ServiceRegistry {
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
      const status = unimplementedStatus(method.path);
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
