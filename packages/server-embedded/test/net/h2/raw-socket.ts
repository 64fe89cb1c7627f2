// A raw TCP socket to an HTTP/2 server on 127.0.0.1, and the frames it received so far: for tests
// that write frames by hand and read the server's answer frame by frame.
import { connect, type Socket } from 'node:net';
import { encodeLiterals } from '@etcdkit/client/h2';

export interface Frame {
  type: number;
  flags: number;
  streamId: number;
  payload: Buffer;
}

/** Connects to `port`; `isClosed` turns true once the server ended the connection. */
export async function rawConnect(port: number) {
  const socket: Socket = connect(port, '127.0.0.1');
  const frames: Frame[] = [];
  let rest = Buffer.alloc(0);
  let closed = false;
  socket.on('data', (chunk: Buffer) => {
    rest = Buffer.concat([rest, chunk]);
    while (rest.length >= 9 && rest.length >= 9 + rest.readUIntBE(0, 3)) {
      const length = rest.readUIntBE(0, 3);
      frames.push({
        type: rest[3]!,
        flags: rest[4]!,
        streamId: rest.readUInt32BE(5),
        payload: rest.subarray(9, 9 + length),
      });
      rest = rest.subarray(9 + length);
    }
  });
  socket.on('error', () => {});
  socket.on('close', () => {
    closed = true;
  });
  await new Promise<void>((resolve) => socket.once('connect', () => resolve()));
  return { socket, frames, isClosed: () => closed };
}

/** A gRPC request's header block for `path`, as literals: what a client sends to open a call. */
export function requestBlock(path: string): Buffer {
  return encodeLiterals(
    [
      [':method', 'POST'],
      [':scheme', 'http'],
      [':path', path],
      [':authority', 'localhost'],
      ['content-type', 'application/grpc'],
    ].map(([name, value]) => ({ name: name!, value: value!, sensitive: false })),
  );
}
