// The socket writes and reads of this process's clients, seen as they happen: every write is a
// system call and every read a wakeup of the event loop (recipes-cycles.ts counts them per lock
// cycle, recipes-frames.ts reads the HTTP/2 frames in them). Patches net.Socket for good: a bench
// process only.
import { Socket } from 'node:net';

/** Calls `onWrite` with each chunk written to a socket, `onRead` with each chunk read from one. */
export function watchSocketIo(
  onWrite: (chunk: unknown) => void,
  onRead: (chunk: Buffer) => void,
): void {
  const write = Socket.prototype.write;
  Socket.prototype.write = function (this: Socket, ...args: Parameters<Socket['write']>) {
    onWrite(args[0]);
    return Reflect.apply(write, this, args);
  } as Socket['write'];
  // Sockets this process connects (its clients'), from their first byte.
  const connect = Socket.prototype.connect;
  Socket.prototype.connect = function (this: Socket, ...args: unknown[]) {
    this.on('data', onRead);
    return Reflect.apply(connect, this, args);
  } as Socket['connect'];
}
