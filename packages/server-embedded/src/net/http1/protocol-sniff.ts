// One client port, two protocols, as etcd serves them: a connection that opens with the HTTP/2
// client preface is gRPC, anything else is HTTP/1.x (health checks, /version, /metrics). The first
// octets decide; they are handed on with the connection.
import type { Socket } from 'node:net';

/** What every HTTP/2 client sends first (RFC 9113 section 3.4). */
const H2_PREFACE = Buffer.from('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n', 'latin1');

/** Where a connection goes once its protocol is known. */
export interface ProtocolRoutes {
  /** HTTP/2: the socket's first octets are pushed back into it, unread. */
  readonly h2: (socket: Socket) => void;
  /** HTTP/1.x, with the octets read so far. */
  readonly http1: (socket: Socket, first: Buffer) => void;
}

/**
 * Reads until the first octets match the HTTP/2 preface or cannot, then hands the socket on. At
 * most 24 octets are held; a peer that sends nothing holds nothing.
 */
export function sniffProtocol(socket: Socket, routes: ProtocolRoutes): void {
  let seen: Buffer = Buffer.alloc(0);
  const onData = (chunk: Buffer): void => {
    seen = seen.length === 0 ? chunk : Buffer.concat([seen, chunk]);
    const compared = Math.min(seen.length, H2_PREFACE.length);
    const h2 = seen.subarray(0, compared).equals(H2_PREFACE.subarray(0, compared));
    if (h2 && compared < H2_PREFACE.length) return;
    socket.off('data', onData);
    // Paused before anything else reads, so no octet is emitted with no one listening.
    socket.pause();
    if (h2) {
      socket.unshift(seen);
      routes.h2(socket);
    } else {
      routes.http1(socket, seen);
    }
    socket.resume();
  };
  socket.on('data', onData);
}
