// A raw HTTP/1.x client for the tests: sends exactly the octets given (no normalisation of the
// path, no Host unless written) and parses what comes back, so malformed requests, pipelining and
// connection endings can be compared between the embedded server and a real etcd.
import { connect as netConnect, type Socket } from 'node:net';
import { type ConnectionOptions, connect as tlsConnect } from 'node:tls';

/** One parsed response. */
export interface RawResponse {
  /** 'HTTP/1.1 200 OK' */
  readonly statusLine: string;
  readonly status: number;
  /** Header fields in the order received, names as sent. */
  readonly headers: readonly (readonly [string, string])[];
  readonly body: string;
}

/** What one connection gave. */
export interface Exchange {
  readonly responses: readonly RawResponse[];
  /** The server closed the connection (before the expected responses were all in, or after). */
  readonly closed: boolean;
  /** The error that ended the connection, if one did (a refused TLS handshake). */
  readonly failure?: string;
}

/** Options of {@link exchange}. */
export interface ExchangeOptions {
  /** Responses to wait for; the connection is then dropped unless `untilClose`. Default 1. */
  readonly responses?: number;
  /** Wait for the server to close after the responses (for answers that promise it). */
  readonly untilClose?: boolean;
  /** The requests are HEAD: bodies are not sent although Content-Length says how long. */
  readonly head?: boolean;
  /** TLS options (ALPN http/1.1 unless given): the connection is https. */
  readonly tls?: ConnectionOptions;
}

/** Sends `request` on a new connection to 127.0.0.1:`port` and reads the answers. */
export function exchange(
  port: number,
  request: string | Buffer,
  options: ExchangeOptions = {},
): Promise<Exchange> {
  const wanted = options.responses ?? 1;
  return new Promise((resolve, reject) => {
    const socket: Socket =
      options.tls === undefined
        ? netConnect({ host: '127.0.0.1', port })
        : tlsConnect({ host: '127.0.0.1', port, ALPNProtocols: ['http/1.1'], ...options.tls });
    let received = Buffer.alloc(0);
    let responses: RawResponse[] = [];
    const finish = (closed: boolean, failure?: string): void => {
      socket.destroy();
      resolve(failure === undefined ? { responses, closed } : { responses, closed, failure });
    };
    socket.once(options.tls === undefined ? 'connect' : 'secureConnect', () =>
      socket.write(request),
    );
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      responses = parseResponses(received, options.head === true);
      if (responses.length >= wanted && options.untilClose !== true) finish(false);
    });
    socket.on('error', (error: NodeJS.ErrnoException) => {
      // A reset after the answers is a close (Go resets when it discards unread input).
      if (error.code === 'ECONNRESET') finish(true);
      else if (options.tls !== undefined) finish(true, error.code ?? error.message);
      else reject(error);
    });
    socket.on('close', () => finish(true));
  });
}

/** Every complete response in `bytes`. */
export function parseResponses(bytes: Buffer, head: boolean): RawResponse[] {
  const responses: RawResponse[] = [];
  let offset = 0;
  for (;;) {
    const end = bytes.indexOf('\r\n\r\n', offset);
    if (end < 0) return responses;
    const lines = bytes.subarray(offset, end).toString('latin1').split('\r\n');
    const statusLine = lines[0]!;
    const headers = lines.slice(1).map((line): [string, string] => {
      const colon = line.indexOf(':');
      return [line.slice(0, colon), line.slice(colon + 1).trim()];
    });
    const field = (name: string): string | undefined =>
      headers.find(([key]) => key.toLowerCase() === name)?.[1];
    let bodyStart = end + 4;
    let body: Buffer;
    const length = field('content-length');
    if (head) {
      body = Buffer.alloc(0);
    } else if (length !== undefined) {
      if (bytes.length < bodyStart + Number(length)) return responses;
      body = bytes.subarray(bodyStart, bodyStart + Number(length));
      bodyStart += Number(length);
    } else if (field('transfer-encoding') === 'chunked') {
      const chunks: Buffer[] = [];
      for (;;) {
        const lineEnd = bytes.indexOf('\r\n', bodyStart);
        if (lineEnd < 0) return responses;
        const size = Number.parseInt(bytes.subarray(bodyStart, lineEnd).toString(), 16);
        if (bytes.length < lineEnd + 2 + size + 2) return responses;
        chunks.push(bytes.subarray(lineEnd + 2, lineEnd + 2 + size));
        bodyStart = lineEnd + 2 + size + 2;
        if (size === 0) break;
      }
      body = Buffer.concat(chunks);
    } else {
      // No length: the body runs to the end of the connection.
      body = bytes.subarray(bodyStart);
      bodyStart = bytes.length;
    }
    responses.push({
      statusLine,
      status: Number(statusLine.split(' ')[1]),
      headers,
      body: body.toString('utf8'),
    });
    offset = bodyStart;
  }
}

/** `response` without what legitimately differs between two servers: the Date field. */
export function comparable(response: RawResponse): RawResponse {
  return { ...response, headers: response.headers.filter(([name]) => name !== 'Date') };
}

/** A GET of `target` on its own connection, closed by the client after the answer. */
export function get(target: string, method = 'GET'): string {
  return `${method} ${target} HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n`;
}
