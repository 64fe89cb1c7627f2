// Servers that do not take a client's requests, for the tests of maxBufferedRequestBytes: one that
// keeps every stream's flow-control window closed, one that opens its windows but never reads its
// socket. Raw TCP on loopback; each sends its SETTINGS and nothing more.
import { createServer, type Server, type Socket } from 'node:net';
import {
  MAX_WINDOW,
  SETTINGS_INITIAL_WINDOW_SIZE,
  settingsFrame,
  windowUpdateFrame,
} from '../../src/transport/h2/index.js';

/** A server whose streams get no window at all: every DATA frame waits for it. */
export const CLOSED_WINDOWS = settingsFrame([[SETTINGS_INITIAL_WINDOW_SIZE, 0]]);
/** Windows as large as HTTP/2 allows, for a server that then never reads. */
export const OPEN_WINDOWS = Buffer.concat([
  settingsFrame([[SETTINGS_INITIAL_WINDOW_SIZE, MAX_WINDOW]]),
  windowUpdateFrame(0, MAX_WINDOW - 65_535),
]);

/**
 * A server that sends `preface` on each connection and reads what comes only when `reads`; its
 * port. `cleanups` gets what stops it and its connections.
 */
export async function serverSending(
  preface: Buffer,
  reads: boolean,
  cleanups: (() => unknown)[],
): Promise<number> {
  const server: Server = createServer((socket: Socket) => {
    socket.on('error', () => {});
    if (!reads) socket.pause();
    else socket.resume();
    socket.write(preface);
    cleanups.push(() => socket.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  cleanups.push(() => new Promise((resolve) => server.close(resolve)));
  return (server.address() as { port: number }).port;
}
