import { createServer, type Socket } from 'node:net';
import { closeServer, listenOnFreePort } from './internal/ports.js';

/** A TCP server that accepts connections and never sends a byte. */
export interface BlackHole {
  /** `http://127.0.0.1:PORT`. */
  readonly endpoint: string;
  readonly port: number;
  /** Connections currently held open. */
  readonly connectionCount: number;
  /** Stops listening and destroys every held connection. */
  close(): Promise<void>;
}

/**
 * Starts a black hole on a free 127.0.0.1 port: TCP connects succeed, then nothing (no TLS or
 * HTTP/2 handshake answer). For dial- and handshake-timeout tests.
 */
export async function startBlackHole(): Promise<BlackHole> {
  const sockets = new Set<Socket>();
  const server = createServer((socket) => {
    sockets.add(socket);
    // Read and discard, so the peer's writes never block on a full window.
    socket.resume();
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
  });
  const port = await listenOnFreePort(server);
  return {
    endpoint: `http://127.0.0.1:${port}`,
    port,
    get connectionCount() {
      return sockets.size;
    },
    async close() {
      const closed = closeServer(server);
      for (const socket of sockets) socket.destroy();
      sockets.clear();
      await closed;
    },
  };
}
