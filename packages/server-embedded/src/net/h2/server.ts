// gRPC served on the server's own HTTP/2 connections: each new stream's request headers checked
// as grpc-js's server checks them (content type, method path, grpc-timeout), then a GrpcCall for
// its route. Listening is optional: `handle` takes any accepted socket (TCP, or TLS after ALPN
// h2), so the embedded server's own listeners can hand connections over.
import { type AddressInfo, createServer, type Server, type Socket } from 'node:net';
import { createServer as createTlsServer, type TLSSocket, type TlsOptions } from 'node:tls';
import { type HeaderField, WriteOrder } from '@etcdkit/client/h2';
import { GrpcCode } from '../../errors.js';
import { grpcTimeoutMs } from '../grpc-request.js';
import { type ConnectionOptions, H2ServerConnection } from './connection.js';
import { GrpcCall } from './grpc-call.js';
import { httpStatusBlock, trailersOnlyBlock } from './response-headers.js';
import type { Routes } from './routes.js';
import type { H2Stream } from './stream.js';

/** grpc-js's default max_receive_message_length. */
const DEFAULT_MAX_RECEIVE_BYTES = 4 * 1024 * 1024;
const UNSUPPORTED_MEDIA_TYPE = 415;

/** How the server serves. */
export interface H2GrpcServerOptions extends ConnectionOptions {
  readonly routes: Routes;
  /** The largest request message accepted (grpc-js's max_receive_message_length). */
  readonly maxReceiveBytes?: number;
  /**
   * Takes a request that is not gRPC (etcd's HTTP endpoints over h2); returns false to leave it
   * to the default answer, 415.
   */
  readonly otherRequest?: (stream: H2Stream, fields: readonly HeaderField[]) => boolean;
}

/** The request fields a call needs, found in one pass. */
interface RequestFields {
  path: string | undefined;
  contentType: string | undefined;
  timeout: string | undefined;
  encoding: string;
}

function requestFields(fields: readonly HeaderField[]): RequestFields {
  const found: RequestFields = {
    path: undefined,
    contentType: undefined,
    timeout: undefined,
    encoding: 'identity',
  };
  for (const { name, value } of fields) {
    if (name === ':path') found.path = value;
    else if (name === 'content-type') found.contentType = value;
    else if (name === 'grpc-timeout') found.timeout = value;
    else if (name === 'grpc-encoding') found.encoding = value;
  }
  return found;
}

/** gRPC over the server's own HTTP/2: connections, their calls, and a graceful close. */
export class H2GrpcServer {
  readonly #options: H2GrpcServerOptions;
  readonly #maxReceiveBytes: number;
  readonly #connections = new Set<H2ServerConnection>();
  readonly #listeners: (Server | ReturnType<typeof createTlsServer>)[] = [];
  /** One order of writes for every connection of this server (write-order.ts). */
  readonly #writeOrder = new WriteOrder();
  #closing = false;

  constructor(options: H2GrpcServerOptions) {
    this.#options = options;
    this.#maxReceiveBytes = options.maxReceiveBytes ?? DEFAULT_MAX_RECEIVE_BYTES;
  }

  /** Connections open now. */
  get connections(): number {
    return this.#connections.size;
  }

  /** Serves HTTP/2 on an accepted socket (for TLS: after the handshake chose ALPN h2). */
  handle(socket: Socket): H2ServerConnection {
    const connection: H2ServerConnection = new H2ServerConnection(
      socket,
      {
        stream: (stream, fields) => this.#open(connection, stream, fields),
        close: () => this.#connections.delete(connection),
      },
      this.#options,
      this.#writeOrder,
    );
    this.#connections.add(connection);
    if (this.#closing) connection.close();
    return connection;
  }

  /** Listens on `host:port` (0: an ephemeral port) for plaintext HTTP/2. */
  listen(port: number, host: string): Promise<AddressInfo> {
    const server = createServer((socket) => this.handle(socket));
    return this.#listen(server, port, host);
  }

  /**
   * Listens on `host:port` for HTTP/2 over TLS: ALPN offers h2 only, and a client that did not
   * choose it is disconnected. `options.requestCert` makes client certificates visible to calls.
   */
  listenTls(port: number, host: string, options: TlsOptions): Promise<AddressInfo> {
    const server = createTlsServer({ ...options, ALPNProtocols: ['h2'] }, (socket: TLSSocket) => {
      if (socket.alpnProtocol !== 'h2') socket.destroy();
      else this.handle(socket);
    });
    return this.#listen(server, port, host);
  }

  #listen(server: Server, port: number, host: string): Promise<AddressInfo> {
    this.#listeners.push(server);
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen(port, host, () => {
        server.off('error', reject);
        resolve(server.address() as AddressInfo);
      });
    });
  }

  /**
   * Graceful close: listeners stop, every connection gets GOAWAY and ends once its open calls
   * are over. Resolves when every connection is closed.
   */
  async close(): Promise<void> {
    this.#closing = true;
    const stopped = this.#listeners.map(
      (server) => new Promise<void>((resolve) => server.close(() => resolve())),
    );
    const closed = [...this.#connections].map(
      (connection) =>
        new Promise<void>((resolve) => {
          if (connection.socket.destroyed) resolve();
          else connection.socket.once('close', () => resolve());
          connection.close();
        }),
    );
    await Promise.all([...stopped, ...closed]);
  }

  /** Closes every connection at once (open calls are cancelled) and stops listening. */
  async destroy(): Promise<void> {
    this.#closing = true;
    for (const connection of [...this.#connections]) connection.destroy();
    await Promise.all(
      this.#listeners.map(
        (server) => new Promise<void>((resolve) => server.close(() => resolve())),
      ),
    );
  }

  #open(connection: H2ServerConnection, stream: H2Stream, fields: HeaderField[]): void {
    const request = requestFields(fields);
    const { contentType, path } = request;
    if (contentType === undefined || !contentType.startsWith('application/grpc')) {
      if (this.#options.otherRequest?.(stream, fields) === true) return;
      stream.respond(httpStatusBlock(UNSUPPORTED_MEDIA_TYPE), true);
      return;
    }
    const route = path === undefined ? undefined : this.#options.routes.get(path);
    if (route === undefined || path === undefined) {
      stream.respond(
        trailersOnlyBlock(
          GrpcCode.UNIMPLEMENTED,
          `The server does not implement the method ${path ?? ''}`,
        ),
        true,
      );
      return;
    }
    let timeoutMs: number | undefined;
    if (request.timeout !== undefined) {
      timeoutMs = grpcTimeoutMs(request.timeout);
      if (timeoutMs === undefined) {
        stream.respond(
          trailersOnlyBlock(GrpcCode.INTERNAL, `Invalid grpc-timeout value "${request.timeout}"`),
          true,
        );
        return;
      }
    }
    new GrpcCall(stream, {
      path,
      route,
      fields,
      socket: connection.socket,
      timeoutMs,
      encoding: request.encoding,
      maxReceiveBytes: this.#maxReceiveBytes,
    });
  }
}
