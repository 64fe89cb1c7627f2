// Unary calls answered straight from node:http2, beside grpc-js. grpc-js's server runs every call
// through its interceptor chain, call objects, event emitters and a response written in three
// steps (headers, message, trailers), which cost more server CPU than the KV work itself (see
// docs/embedded-server.md). A unary call that needs none of that machinery (its member has no
// interceptors but the call gate, the gate holds nothing and injects nothing, the request is not
// compressed and its grpc-timeout, if any, parses) is served here: the request read in one piece,
// the handler run, and headers, message and trailers handed to the stream in one go. Everything
// else (streams, Lock and Campaign, faults, simulated clusters' leader gates, compression) goes to
// grpc-js as before. What a client sees is what grpc-js's server sends: the same headers, status
// codes, messages and limits.
import type { Http2Server, IncomingHttpHeaders, ServerHttp2Stream } from 'node:http2';
import { constants } from 'node:http2';
import { TLSSocket } from 'node:tls';
import type { MethodDescriptor } from '@etcdkit/client/protocol';
import type * as grpc from '@grpc/grpc-js';
import { GrpcCode } from '../errors.js';
import type { CallGate, InjectedStatus } from '../faults/call-gate.js';
import { grpcJs } from '../grpc-js-module.js';
import { type CallInfo, toStatus, type UnaryHandler } from '../services/registry.js';
import { grpcTimeoutMs, NOT_METADATA, PRINTABLE_ASCII } from './grpc-request.js';

/** The response headers grpc-js's server sends. */
const RESPONSE_HEADERS = {
  [constants.HTTP2_HEADER_STATUS]: constants.HTTP_STATUS_OK,
  [constants.HTTP2_HEADER_CONTENT_TYPE]: 'application/grpc+proto',
  'grpc-accept-encoding': 'identity,deflate,gzip',
  'grpc-encoding': 'identity',
};
const WAIT_FOR_TRAILERS = { waitForTrailers: true };
const MESSAGE_HEADER_BYTES = 5;

interface Route {
  readonly method: MethodDescriptor<unknown, unknown, 'unary'>;
  readonly handler: UnaryHandler<unknown, unknown>;
}

/** The unary handlers served without grpc-js, and the rules they are served by. */
export class UnaryFastPath {
  private readonly routes = new Map<string, Route>();

  constructor(
    private readonly gate: CallGate,
    /** grpc-js's max_receive_message_length: a larger request is refused as grpc-js does. */
    private readonly maxReceiveBytes: number,
  ) {}

  /** Serves `method` here too (grpc-js keeps its own registration for the calls passed on). */
  add<Req, Res>(method: MethodDescriptor<Req, Res, 'unary'>, handler: UnaryHandler<Req, Res>) {
    this.routes.set(method.path, { method, handler } as unknown as Route);
  }

  /**
   * Puts this in front of the HTTP/2 servers grpc-js made for `server`'s connection injectors:
   * every new stream comes here first and goes on to grpc-js unless served. False (nothing
   * changed) if grpc-js no longer keeps them where this looks.
   */
  divert(server: grpc.Server): boolean {
    const servers: unknown = Reflect.get(server, 'http2Servers');
    if (!(servers instanceof Map)) return false;
    for (const http2Server of servers.keys() as Iterable<Http2Server>) {
      const passOn = http2Server.listeners('stream') as ((...args: unknown[]) => void)[];
      http2Server.removeAllListeners('stream');
      http2Server.on('stream', (stream: ServerHttp2Stream, headers: IncomingHttpHeaders) => {
        if (this.serve(stream, headers)) return;
        for (const listener of passOn) listener(stream, headers);
      });
    }
    return true;
  }

  /** Serves the call on `stream` if it qualifies; false to leave it to grpc-js. */
  private serve(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): boolean {
    const path = headers[constants.HTTP2_HEADER_PATH];
    const route = typeof path === 'string' ? this.routes.get(path) : undefined;
    if (route === undefined || !this.gate.admitsAtOnce()) return false;
    const contentType = headers[constants.HTTP2_HEADER_CONTENT_TYPE];
    if (typeof contentType !== 'string' || !contentType.startsWith('application/grpc')) {
      return false;
    }
    const encoding = headers['grpc-encoding'];
    if (encoding !== undefined && encoding !== 'identity') return false;
    let timeoutMs: number | undefined;
    const timeout = headers['grpc-timeout'];
    if (timeout !== undefined) {
      timeoutMs = grpcTimeoutMs(String(timeout));
      if (timeoutMs === undefined) return false;
    }
    new FastUnaryCall(stream, headers, route, this.gate, this.maxReceiveBytes, timeoutMs);
    return true;
  }
}

/** The status grpc-js sends for what a handler throws (toStatus sets both fields). */
function statusOf(error: unknown): InjectedStatus {
  const status = toStatus(error);
  return { code: (status.code ?? GrpcCode.UNKNOWN) as GrpcCode, details: status.details ?? '' };
}

const CALL = Symbol('fast unary call');
type CallStream = ServerHttp2Stream & { [CALL]?: FastUnaryCall };
const OK_TRAILERS = { 'grpc-status': GrpcCode.OK, 'grpc-message': 'OK' };

function ignore(): void {}
function onClose(this: CallStream): void {
  this[CALL]?.close();
}
function onData(this: CallStream, chunk: Buffer): void {
  this[CALL]?.receive(chunk);
}
function onEnd(this: CallStream): void {
  this[CALL]?.requestEnded();
}
function sendOkTrailers(this: ServerHttp2Stream): void {
  this.sendTrailers(OK_TRAILERS);
}

/** One unary call served from its stream. */
class FastUnaryCall implements CallInfo {
  cancelled = false;
  private answered = false;
  private readonly chunks: Buffer[] = [];
  private received = 0;
  private deadline: NodeJS.Timeout | undefined;
  private requestMetadata: grpc.Metadata | undefined;

  constructor(
    private readonly stream: ServerHttp2Stream,
    private readonly headers: IncomingHttpHeaders,
    private readonly route: Route,
    private readonly gate: CallGate,
    private readonly maxReceiveBytes: number,
    timeoutMs: number | undefined,
  ) {
    // Errors come with a 'close', which is all that matters here.
    // Module-level listeners finding the call on the stream: no closures made per call.
    (stream as CallStream)[CALL] = this;
    stream.on('error', ignore);
    stream.once('close', onClose);
    stream.on('data', onData);
    stream.once('end', onEnd);
    if (timeoutMs !== undefined) {
      this.deadline = setTimeout(
        () => this.finish({ code: GrpcCode.DEADLINE_EXCEEDED, details: 'Deadline exceeded' }),
        timeoutMs,
      );
    }
  }

  /** The values of a text header straight from the headers; grpc-js's Metadata otherwise. */
  get metadata(): Pick<grpc.Metadata, 'get'> {
    return this;
  }

  get(key: string): grpc.MetadataValue[] {
    const name = key.toLowerCase();
    if (name.endsWith('-bin') || name.startsWith(':') || NOT_METADATA.has(name)) {
      return this.fullMetadata().get(name);
    }
    const value = this.headers[name];
    if (value === undefined) return [];
    // grpc-js drops a text value with octets outside printable ASCII.
    return (Array.isArray(value) ? value : [value]).filter((v) => PRINTABLE_ASCII.test(v));
  }

  private fullMetadata(): grpc.Metadata {
    if (this.requestMetadata === undefined) {
      const metadata = grpcJs().Metadata.fromHttp2Headers(this.headers);
      for (const name of NOT_METADATA) metadata.remove(name);
      this.requestMetadata = metadata;
    }
    return this.requestMetadata;
  }

  getPeer(): string {
    const socket = this.stream.session?.socket;
    if (!socket?.remoteAddress) return 'unknown';
    return socket.remotePort
      ? `${socket.remoteAddress}:${socket.remotePort}`
      : socket.remoteAddress;
  }

  getAuthContext(): ReturnType<CallInfo['getAuthContext']> {
    const socket = this.stream.session?.socket;
    if (!(socket instanceof TLSSocket) || !socket.authorized) return {};
    const certificate = socket.getPeerCertificate();
    return { sslPeerCertificate: certificate.raw ? certificate : undefined };
  }

  receive(chunk: Buffer): void {
    if (this.answered) return;
    this.chunks.push(chunk);
    this.received += chunk.length;
    // Refused as soon as the length prefix says too much, as grpc-js's decoder does.
    if (this.received >= MESSAGE_HEADER_BYTES && this.chunks.length === 1) {
      this.checkLength(chunk);
    } else if (this.received >= MESSAGE_HEADER_BYTES) {
      this.checkLength(Buffer.concat(this.chunks));
    }
  }

  private checkLength(bytes: Buffer): void {
    const length = bytes.readUInt32BE(1);
    if (length > this.maxReceiveBytes) {
      this.finish({
        code: GrpcCode.RESOURCE_EXHAUSTED,
        details: `Received message larger than max (${length} vs ${this.maxReceiveBytes})`,
      });
    }
  }

  requestEnded(): void {
    if (this.answered) return;
    const body = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    const { path } = this.route.method;
    if (body.length < MESSAGE_HEADER_BYTES) {
      // grpc-js drops a partial length prefix at the end of the stream: no message at all.
      this.finish({
        code: GrpcCode.UNIMPLEMENTED,
        details: `Received no request message for server streaming method ${path}`,
      });
      return;
    }
    const length = body.readUInt32BE(1);
    const end = MESSAGE_HEADER_BYTES + length;
    if (body.length < end) {
      this.finish({
        code: GrpcCode.UNIMPLEMENTED,
        details: `Received no request message for server streaming method ${path}`,
      });
      return;
    }
    if (
      body.length >= end + MESSAGE_HEADER_BYTES &&
      body.readUInt32BE(end + 1) + end + 5 <= body.length
    ) {
      this.finish({
        code: GrpcCode.UNIMPLEMENTED,
        details: `Received a second request message for server streaming method ${path}`,
      });
      return;
    }
    let request: unknown;
    try {
      request = this.route.method.request.decode(body.subarray(MESSAGE_HEADER_BYTES, end));
    } catch {
      this.finish({ code: GrpcCode.INTERNAL, details: 'Error deserializing request' });
      return;
    }
    // A pause that began while the request was on its way holds it, as the gate would.
    const paused = this.gate.whilePaused();
    if (paused === undefined) this.run(request, length);
    else void paused.then(() => this.run(request, length));
  }

  private run(request: unknown, length: number): void {
    if (this.answered) return;
    let result: unknown;
    try {
      result = this.route.handler(request, length, this);
    } catch (error) {
      this.respond(undefined, statusOf(error));
      return;
    }
    if (result instanceof Promise) {
      result.then(
        (response: unknown) => this.respond(response, undefined),
        (error: unknown) => this.respond(undefined, statusOf(error)),
      );
    } else {
      this.respond(result, undefined);
    }
  }

  /** Sends the response or the error once the gate lets responses out (durability, pauses). */
  private respond(response: unknown, error: InjectedStatus | undefined): void {
    if (this.answered) return;
    const send = (): void => {
      if (error !== undefined) {
        this.finish(error);
      } else {
        this.finishWith(response);
      }
    };
    const wait = this.gate.outbound();
    if (wait === undefined) send();
    else wait.then(send, () => this.finish(this.gate.durabilityFailed));
  }

  private finishWith(response: unknown): void {
    let message: Uint8Array;
    try {
      message = this.route.method.response.encode(response as never).finish();
    } catch {
      this.finish({ code: GrpcCode.INTERNAL, details: 'Error serializing response' });
      return;
    }
    if (this.answered || this.stream.destroyed || this.stream.closed) return;
    this.settle();
    const frame = Buffer.allocUnsafe(MESSAGE_HEADER_BYTES + message.byteLength);
    frame[0] = 0;
    frame.writeUInt32BE(message.byteLength, 1);
    frame.set(message, MESSAGE_HEADER_BYTES);
    const { stream } = this;
    stream.respond(RESPONSE_HEADERS, WAIT_FOR_TRAILERS);
    stream.once('wantTrailers', sendOkTrailers);
    stream.end(frame);
  }

  /** Ends the call with `status` and no message (a trailers-only response). */
  private finish(status: InjectedStatus): void {
    if (this.answered || this.stream.destroyed || this.stream.closed) return;
    this.settle();
    this.stream.respond(
      {
        'grpc-status': status.code,
        'grpc-message': encodeURI(status.details),
        [constants.HTTP2_HEADER_STATUS]: constants.HTTP_STATUS_OK,
        [constants.HTTP2_HEADER_CONTENT_TYPE]: 'application/grpc+proto',
      },
      { endStream: true },
    );
    // What the client still sends is read and dropped, so its flow control window stays open.
    this.stream.resume();
  }

  private settle(): void {
    this.answered = true;
    if (this.deadline !== undefined) clearTimeout(this.deadline);
  }

  close(): void {
    if (!this.answered) this.cancelled = true;
    this.settle();
  }
}
