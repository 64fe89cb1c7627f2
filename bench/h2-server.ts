// Server CPU per unary call: the embedded server's own HTTP/2 layer (net/h2) against a plain
// node:http2 server answering the same prepared bytes for every call (node:http2's floor), and
// grpc-js's server. Each server runs in a child process whose process.cpuUsage() is read before
// and after a round; the client (etcdkit's h2 transport, the cheapest client) runs here. The order
// rotates every round; medians are printed. Not part of bench/run.ts.
// Run: node --conditions=etcdkit-source --import tsx bench/h2-server.ts (ROUNDS=n to change 5)
import { type ChildProcess, fork } from 'node:child_process';
import { constants, createServer as createHttp2Server, type ServerHttp2Stream } from 'node:http2';
import { fileURLToPath } from 'node:url';
import * as grpc from '@grpc/grpc-js';
import { type Channel, H2Transport } from '../packages/client/src/index.js';
import type { MethodDescriptor } from '../packages/client/src/protocol.js';
import { Routes } from '../packages/server-embedded/src/net/h2/routes.js';
import { H2GrpcServer } from '../packages/server-embedded/src/net/h2/server.js';

type Kind = 'h2' | 'node-http2' | 'grpc-js';
const PATH = '/bench.Echo/Put';
/** About the size of a PutResponse with its header. */
const RESPONSE = Buffer.alloc(24, 1);
const REQUEST = Buffer.alloc(32, 2);
const ROUNDS = Number(process.env.ROUNDS ?? 5);
const CALLS: Record<number, number> = { 1: 3000, 64: 20_000 };

/** The child: serves `kind` on an ephemeral port, answers 'cpu' with its CPU time in µs. */
async function serve(kind: Kind): Promise<void> {
  let port: number;
  if (kind === 'h2') {
    const server = new H2GrpcServer({
      routes: new Routes().unary(PATH, () => RESPONSE),
      streamWindow: 1 << 20,
      connectionWindow: 1 << 20,
    });
    port = (await server.listen(0, '127.0.0.1')).port;
  } else if (kind === 'grpc-js') {
    // grpc-js's own server, for scale: what the embedded server runs on without its fast path.
    const server = new grpc.Server();
    const raw = (bytes: Buffer): Buffer => bytes;
    server.register(
      PATH,
      (_call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) =>
        callback(null, RESPONSE),
      raw,
      raw,
      'unary',
    );
    port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) =>
        error ? reject(error) : resolve(bound),
      ),
    );
  } else {
    const framed = Buffer.alloc(5 + RESPONSE.length);
    framed.writeUInt32BE(RESPONSE.length, 1);
    RESPONSE.copy(framed, 5);
    const headers = {
      [constants.HTTP2_HEADER_STATUS]: 200,
      [constants.HTTP2_HEADER_CONTENT_TYPE]: 'application/grpc+proto',
      'grpc-accept-encoding': 'identity,deflate,gzip',
      'grpc-encoding': 'identity',
    };
    const trailers = { 'grpc-status': 0, 'grpc-message': 'OK' };
    const server = createHttp2Server();
    server.on('stream', (stream: ServerHttp2Stream) => {
      stream.on('data', () => {});
      stream.once('end', () => {
        stream.respond(headers, { waitForTrailers: true });
        stream.once('wantTrailers', () => stream.sendTrailers(trailers));
        stream.end(framed);
      });
      stream.on('error', () => {});
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    const address = server.address();
    port = typeof address === 'object' && address !== null ? address.port : 0;
  }
  process.on('message', (message) => {
    if (message === 'cpu') {
      const { user, system } = process.cpuUsage();
      process.send?.({ cpu: user + system });
    } else if (message === 'exit') process.exit(0);
  });
  process.send?.({ port });
}

function ask(child: ChildProcess, message: string): Promise<Record<string, number>> {
  return new Promise((resolve) => {
    child.once('message', (reply) => resolve(reply as Record<string, number>));
    child.send(message);
  });
}

const raw = {
  encode: (message: Uint8Array) => ({ finish: () => message }),
  decode: (bytes: Uint8Array) => bytes,
};
const METHOD = {
  service: 'bench.Echo',
  name: 'Put',
  path: PATH,
  kind: 'unary',
  request: raw,
  response: raw,
} as unknown as MethodDescriptor<Uint8Array, Uint8Array, 'unary'>;

/** `calls` calls, `inFlight` at a time. */
async function drive(channel: Channel, calls: number, inFlight: number): Promise<void> {
  let left = calls;
  const worker = async (): Promise<void> => {
    while (left-- > 0) await channel.unary(METHOD, REQUEST, {});
  };
  await Promise.all(Array.from({ length: inFlight }, worker));
}

function median(values: number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)]!;
}

async function main(): Promise<void> {
  const file = fileURLToPath(import.meta.url);
  const kinds: Kind[] = ['h2', 'node-http2', 'grpc-js'];
  const servers = new Map<Kind, { child: ChildProcess; channel: Channel }>();
  for (const kind of kinds) {
    const child = fork(file, ['serve', kind], {
      execArgv: ['--conditions=etcdkit-source', '--import', 'tsx'],
    });
    const { port } = await new Promise<{ port: number }>((resolve) =>
      child.once('message', (m) => resolve(m as { port: number })),
    );
    const channel = new H2Transport().open({ target: `127.0.0.1:${port}` });
    await drive(channel, 2000, 16); // warm-up
    servers.set(kind, { child, channel });
  }
  for (const inFlight of [1, 64]) {
    const perCall = new Map<Kind, number[]>(kinds.map((k) => [k, []]));
    for (let round = 0; round < ROUNDS; round++) {
      // Rotated: each server goes first, in the middle and last in turn.
      const order = kinds.map((_, i) => kinds[(i + round) % kinds.length]!);
      for (const kind of order) {
        const { child, channel } = servers.get(kind)!;
        const calls = CALLS[inFlight]!;
        const before = (await ask(child, 'cpu')).cpu!;
        await drive(channel, calls, inFlight);
        const after = (await ask(child, 'cpu')).cpu!;
        perCall.get(kind)!.push((after - before) / calls);
      }
    }
    const own = median(perCall.get('h2')!);
    const node = median(perCall.get('node-http2')!);
    const grpcJs = median(perCall.get('grpc-js')!);
    console.log(
      `in flight ${inFlight}: server CPU per call: net/h2 ${own.toFixed(2)} µs, ` +
        `node:http2 ${node.toFixed(2)} µs, grpc-js ${grpcJs.toFixed(2)} µs; ` +
        `net/h2 / node:http2 ${(own / node).toFixed(2)}, net/h2 / grpc-js ${(own / grpcJs).toFixed(2)} ` +
        `(medians of ${ROUNDS} rounds)`,
    );
  }
  for (const { child, channel } of servers.values()) {
    channel.close();
    child.send('exit');
  }
}

if (process.argv[2] === 'serve') await serve(process.argv[3] as Kind);
else await main();
