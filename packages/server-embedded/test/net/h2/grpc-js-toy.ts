// The toy service's Unary method on @grpc/grpc-js's server, configured as the member server
// configures it (member-server.ts), for tests that put the two servers side by side.
import * as grpc from '@grpc/grpc-js';

/** max_receive_message_length of a member with the default --max-request-bytes. */
const MAX_RECEIVE_BYTES = 1.5 * 1024 * 1024 + 512 * 1024;
const raw = (bytes: Buffer): Buffer => bytes;

/** Starts grpc-js's server on 127.0.0.1 and an ephemeral port; `stop` shuts it down at once. */
export async function startGrpcJsToy() {
  const server = new grpc.Server({
    'grpc.max_receive_message_length': MAX_RECEIVE_BYTES,
    'grpc.max_send_message_length': -1,
  });
  server.register(
    '/toy.Echo/Unary',
    (call: grpc.ServerUnaryCall<Buffer, Buffer>, callback: grpc.sendUnaryData<Buffer>) =>
      callback(null, call.request),
    raw,
    raw,
    'unary',
  );
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) =>
      error ? reject(error) : resolve(bound),
    ),
  );
  return { server, port, target: `127.0.0.1:${port}`, stop: () => server.forceShutdown() };
}
