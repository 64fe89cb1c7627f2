// Probes of a port on 127.0.0.1 from outside, for tests that check a server let go of it.
import { connect, createServer } from 'node:net';

/** How a plain TCP connection to `port` ends: 'connected', or its error code (ECONNREFUSED...). */
export function connectOutcome(port: number): Promise<string> {
  return new Promise((resolve) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve('connected');
    });
    socket.once('error', (error: NodeJS.ErrnoException) => resolve(error.code ?? error.message));
  });
}

/** Whether this process can listen on `port` (the server under test released it). */
export function portIsFree(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const server = createServer();
    server.once('error', () => resolve(false));
    server.listen({ host: '127.0.0.1', port, exclusive: true }, () => {
      server.close(() => resolve(true));
    });
  });
}
