// The server's own HTTP/2 layer reached by node:http2's client: every octet of the answers is
// seen (headers, messages, trailers, RST_STREAM codes), with flow control and GOAWAY.
import {
  type ClientHttp2Session,
  connect,
  constants,
  type IncomingHttpHeaders,
  type OutgoingHttpHeaders,
} from 'node:http2';
import { afterEach, describe, expect, it } from 'vitest';
import {
  grpcFrame,
  grpcMessages,
  NON_ASCII_MESSAGE,
  release,
  startToy,
  until,
} from './toy-service.js';

interface Answer {
  status: number | undefined;
  headers: IncomingHttpHeaders;
  body: Buffer;
  trailers: IncomingHttpHeaders | undefined;
  rstCode: number;
}

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

async function setup(options: Parameters<typeof startToy>[0] = {}) {
  const toy = await startToy(options);
  cleanups.push(toy.stop);
  const session = connect(`http://${toy.target}`);
  cleanups.push(() => session.destroy());
  return { toy, session };
}

/** One call: the request body as given (already framed), what came back. */
function call(
  session: ClientHttp2Session,
  path: string,
  body: Buffer | undefined,
  extra: OutgoingHttpHeaders = {},
): Promise<Answer> {
  return new Promise((resolve, reject) => {
    const stream = session.request({
      ':method': 'POST',
      ':path': path,
      'content-type': 'application/grpc',
      te: 'trailers',
      ...extra,
    });
    const chunks: Buffer[] = [];
    let headers: IncomingHttpHeaders = {};
    let trailers: IncomingHttpHeaders | undefined;
    stream.on('response', (h) => {
      headers = h;
    });
    stream.on('trailers', (t) => {
      trailers = t;
    });
    stream.on('data', (chunk: Buffer) => chunks.push(chunk));
    stream.on('error', reject);
    stream.on('close', () =>
      resolve({
        status: headers[':status'] as number | undefined,
        headers,
        body: Buffer.concat(chunks),
        trailers,
        rstCode: stream.rstCode ?? 0,
      }),
    );
    stream.end(body);
  });
}

describe('H2GrpcServer reached by node:http2', () => {
  it("answers a unary call with grpc-js's headers, the message and OK trailers", async () => {
    const { session } = await setup();
    const answer = await call(session, '/toy.Echo/Unary', grpcFrame(Buffer.from('hello')));
    expect(answer.headers).toMatchObject({
      ':status': 200,
      'content-type': 'application/grpc+proto',
      'grpc-accept-encoding': 'identity,deflate,gzip',
      'grpc-encoding': 'identity',
    });
    expect(grpcMessages(answer.body).map(String)).toEqual(['hello']);
    expect(answer.trailers).toMatchObject({ 'grpc-status': '0', 'grpc-message': 'OK' });
    expect(answer.rstCode).toBe(constants.NGHTTP2_NO_ERROR);
  });

  it('answers an unknown method with a trailers-only UNIMPLEMENTED', async () => {
    const { session } = await setup();
    const answer = await call(session, '/toy.Echo/Nope', grpcFrame(Buffer.from('x')));
    expect(answer.headers).toMatchObject({
      ':status': 200,
      'content-type': 'application/grpc+proto',
      'grpc-status': '12',
      'grpc-message': 'The%20server%20does%20not%20implement%20the%20method%20/toy.Echo/Nope',
    });
    expect(answer.body.length).toBe(0);
    expect(answer.trailers).toBeUndefined();
  });

  it('refuses a request that is not gRPC with 415', async () => {
    const { session } = await setup();
    const answer = await call(session, '/toy.Echo/Unary', Buffer.from('x'), {
      'content-type': 'text/plain',
    });
    expect(answer.status).toBe(415);
  });

  it("refuses a message above the receive limit with RESOURCE_EXHAUSTED, in etcd's words", async () => {
    const { session } = await setup({ maxReceiveBytes: 1000 });
    const answer = await call(session, '/toy.Echo/Unary', grpcFrame(Buffer.alloc(1001)));
    expect(answer.headers['grpc-status']).toBe('8');
    expect(decodeURIComponent(String(answer.headers['grpc-message']))).toBe(
      'grpc: received message larger than max (1001 vs. 1000)',
    );
  });

  it('answers a request without a message, or with two, as grpc-js does', async () => {
    const { session } = await setup();
    const none = await call(session, '/toy.Echo/Unary', Buffer.from([0, 0, 0]));
    expect(none.headers['grpc-status']).toBe('12');
    expect(decodeURIComponent(String(none.headers['grpc-message']))).toBe(
      'Received no request message for server streaming method /toy.Echo/Unary',
    );
    const two = Buffer.concat([grpcFrame(Buffer.from('a')), grpcFrame(Buffer.from('b'))]);
    const second = await call(session, '/toy.Echo/Unary', two);
    expect(decodeURIComponent(String(second.headers['grpc-message']))).toBe(
      'Received a second request message for server streaming method /toy.Echo/Unary',
    );
  });

  it('streams N messages in order', async () => {
    const { session } = await setup();
    const answer = await call(session, '/toy.Echo/Count', grpcFrame(Buffer.from('50')));
    expect(grpcMessages(answer.body).map(String)).toEqual(
      Array.from({ length: 50 }, (_, i) => `message ${i}`),
    );
    expect(answer.trailers).toMatchObject({ 'grpc-status': '0' });
  });

  it('moves messages larger than the windows both ways (flow control)', async () => {
    // The server announces 65,535-octet windows; the client's are node's defaults (65,535).
    const { session } = await setup({ streamWindow: 65_535, connectionWindow: 65_535 });
    const big = Buffer.alloc(300 * 1024);
    for (let i = 0; i < big.length; i++) big[i] = (i * 31) & 0xff;
    const unary = await call(session, '/toy.Echo/Unary', grpcFrame(big));
    expect(grpcMessages(unary.body)).toHaveLength(1);
    expect(grpcMessages(unary.body)[0]!.equals(big)).toBe(true);
    const repeated = await call(session, '/toy.Echo/Repeat', grpcFrame(big));
    const messages = grpcMessages(repeated.body);
    expect(messages).toHaveLength(4);
    for (const message of messages) expect(message.equals(big)).toBe(true);
    expect(repeated.trailers).toMatchObject({ 'grpc-status': '0' });
  });

  it('percent-encodes a non-ASCII status message', async () => {
    const { session } = await setup();
    const answer = await call(session, '/toy.Echo/Fail', grpcFrame(Buffer.from(NON_ASCII_MESSAGE)));
    expect(answer.headers['grpc-status']).toBe('9');
    expect(answer.headers['grpc-message']).toBe(encodeURI(NON_ASCII_MESSAGE));
  });

  it('passes metadata and the peer address to the handler', async () => {
    const { session, toy } = await setup();
    const answer = await call(session, '/toy.Echo/Whoami', grpcFrame(Buffer.alloc(0)), {
      token: 'secret',
    });
    expect(grpcMessages(answer.body).map(String)).toEqual(['secret']);
    expect(toy.seen.whoami[0]!.token).toEqual(['secret']);
    expect(toy.seen.whoami[0]!.peer).toMatch(/^127\.0\.0\.1:\d+$/);
  });

  it("aborts the handler's signal on RST_STREAM", async () => {
    const { session, toy } = await setup();
    const stream = session.request({
      ':method': 'POST',
      ':path': '/toy.Echo/Hold',
      'content-type': 'application/grpc',
    });
    stream.end(grpcFrame(Buffer.from('x')));
    await until(() => toy.seen.held.length === 1);
    stream.close(constants.NGHTTP2_CANCEL);
    await until(() => toy.seen.aborts.length === 1);
    expect(toy.seen.held[0]!.ended).toBe(true);
    expect(String(toy.seen.aborts[0])).toContain('cancelled');
  });

  it('ends a call at its grpc-timeout with DEADLINE_EXCEEDED and aborts its signal', async () => {
    const { session, toy } = await setup();
    const started = Date.now();
    const answer = await call(session, '/toy.Echo/Hold', grpcFrame(Buffer.from('x')), {
      'grpc-timeout': '100m',
    });
    expect(Date.now() - started).toBeGreaterThanOrEqual(90);
    expect(answer.headers).toMatchObject({
      'grpc-status': '4',
      'grpc-message': 'Deadline%20exceeded',
    });
    expect(toy.seen.aborts).toHaveLength(1);
  });

  it('lets open calls finish after a graceful close, and takes no new ones', async () => {
    const { session, toy } = await setup();
    const held = call(session, '/toy.Echo/Hold', grpcFrame(Buffer.from('x')));
    await until(() => toy.seen.held.length === 1);
    let goaway: number | undefined;
    session.on('goaway', (code) => {
      goaway = code;
    });
    const closed = toy.server.close();
    await until(() => goaway !== undefined);
    expect(goaway).toBe(constants.NGHTTP2_NO_ERROR);
    release(toy.seen.held[0]!);
    const answer = await held;
    expect(grpcMessages(answer.body).map(String)).toEqual(['released']);
    expect(answer.trailers).toMatchObject({ 'grpc-status': '0' });
    await closed;
    expect(toy.server.connections).toBe(0);
  });

  it('answers two hundred concurrent calls on one connection', async () => {
    const { session } = await setup();
    const answers = await Promise.all(
      Array.from({ length: 200 }, (_, i) =>
        call(session, '/toy.Echo/Unary', grpcFrame(Buffer.from(`call ${i}`))),
      ),
    );
    expect(answers.map((a) => String(grpcMessages(a.body)[0]))).toEqual(
      Array.from({ length: 200 }, (_, i) => `call ${i}`),
    );
  });

  it('echoes bidi messages as they come, and ends after the half-close', async () => {
    const { session } = await setup();
    const stream = session.request({
      ':method': 'POST',
      ':path': '/toy.Echo/Chat',
      'content-type': 'application/grpc',
    });
    let body = Buffer.alloc(0);
    let trailers: IncomingHttpHeaders | undefined;
    stream.on('data', (chunk: Buffer) => {
      body = Buffer.concat([body, chunk]);
    });
    stream.on('trailers', (t) => {
      trailers = t;
    });
    const closed = new Promise<void>((resolve) => stream.on('close', () => resolve()));
    stream.write(grpcFrame(Buffer.from('first')));
    // The echo comes back while the client's side is still open.
    await until(() => grpcMessages(body).length === 1);
    expect(String(grpcMessages(body)[0])).toBe('echo:first');
    stream.write(grpcFrame(Buffer.from('second')));
    await until(() => grpcMessages(body).length === 2);
    stream.end();
    await closed;
    expect(grpcMessages(body).map(String)).toEqual(['echo:first', 'echo:second', 'bye after 2']);
    expect(trailers).toMatchObject({ 'grpc-status': '0', 'grpc-message': 'OK' });
  });
});
