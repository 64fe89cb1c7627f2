// A bare gRPC client over the generated method table, so tests see exactly what the server sends:
// every field, status code and message, with no client library in between.
import type { MethodDescriptor } from '@etcdkit/client/protocol';
import * as grpc from '@grpc/grpc-js';

/** Metadata and a deadline for one call. */
export interface RawCallOptions {
  /** Headers sent with the call, e.g. `{ hasleader: 'true' }`. */
  readonly metadata?: Readonly<Record<string, string>>;
  /** Give up after this many ms (DeadlineExceeded). */
  readonly deadlineMs?: number;
}

/** grpc-js metadata from plain headers. */
export function metadataOf(headers: Readonly<Record<string, string>> = {}): grpc.Metadata {
  const metadata = new grpc.Metadata();
  for (const [key, value] of Object.entries(headers)) metadata.set(key, value);
  return metadata;
}

/** A failed call as the test sees it. */
export interface CallError {
  readonly code: number;
  readonly details: string;
}

export class RawClient {
  private readonly client: grpc.Client;

  constructor(endpoint: string, options: grpc.ChannelOptions = {}) {
    this.client = new grpc.Client(
      endpoint.replace(/^https?:\/\//, ''),
      grpc.credentials.createInsecure(),
      { 'grpc.max_receive_message_length': -1, ...options },
    );
  }

  unary<Req, Res>(
    method: MethodDescriptor<Req, Res>,
    request: Req,
    options: RawCallOptions = {},
  ): Promise<Res> {
    return new Promise((resolve, reject) => {
      this.client.makeUnaryRequest(
        method.path,
        (message: Req) => Buffer.from(method.request.encode(message).finish()),
        (bytes: Buffer) => method.response.decode(bytes),
        request,
        metadataOf(options.metadata),
        options.deadlineMs === undefined ? {} : { deadline: Date.now() + options.deadlineMs },
        (error, response) => (error ? reject(error) : resolve(response!)),
      );
    });
  }

  /** Sends raw bytes as the request, for malformed or oversized messages. */
  unaryBytes<Res>(method: MethodDescriptor<unknown, Res>, request: Uint8Array): Promise<Res> {
    return new Promise((resolve, reject) => {
      this.client.makeUnaryRequest(
        method.path,
        (message: Uint8Array) => Buffer.from(message),
        (bytes: Buffer) => method.response.decode(bytes),
        request,
        (error, response) => (error ? reject(error) : resolve(response!)),
      );
    });
  }

  /** Every message of a server stream; rejects with the stream's error status. */
  serverStream<Req, Res>(method: MethodDescriptor<Req, Res>, request: Req): Promise<Res[]> {
    return new Promise((resolve, reject) => {
      const messages: Res[] = [];
      const call = this.client.makeServerStreamRequest(
        method.path,
        (message: Req) => Buffer.from(method.request.encode(message).finish()),
        (bytes: Buffer) => method.response.decode(bytes),
        request,
      );
      call.on('data', (message: Res) => messages.push(message));
      call.on('error', reject);
      call.on('end', () => resolve(messages));
    });
  }

  /** Opens a server stream and hands back its raw call, for tests that pace the reads. */
  openServerStream<Req, Res>(
    method: MethodDescriptor<Req, Res>,
    request: Req,
  ): grpc.ClientReadableStream<Res> {
    return this.client.makeServerStreamRequest(
      method.path,
      (message: Req) => Buffer.from(method.request.encode(message).finish()),
      (bytes: Buffer) => method.response.decode(bytes),
      request,
    );
  }

  close(): void {
    this.client.close();
  }
}

/** The status of a rejected call, for `expect(...).rejects.toMatchObject(status(...))`. */
export function status(code: number, details: string): CallError {
  return { code, details };
}
