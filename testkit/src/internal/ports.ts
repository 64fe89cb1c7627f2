import { createServer, type Server } from 'node:net';

/**
 * Free TCP ports on 127.0.0.1, all distinct: every port is held open until all are found, then
 * released together, so one call never returns the same port twice. Another process may still
 * take a port before the caller binds it; callers that spawn servers retry on "address in use".
 */
export async function freePorts(count: number): Promise<number[]> {
  const servers: Server[] = [];
  try {
    const ports: number[] = [];
    for (let i = 0; i < count; i++) {
      const server = createServer();
      servers.push(server);
      ports.push(await listenOnFreePort(server));
    }
    return ports;
  } finally {
    await Promise.all(servers.map(closeServer));
  }
}

/** One free TCP port on 127.0.0.1. */
export async function freePort(): Promise<number> {
  const [port] = await freePorts(1);
  return port!;
}

/** Binds `server` to a kernel-chosen port on 127.0.0.1 and returns that port. */
export function listenOnFreePort(server: Server): Promise<number> {
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    server.listen({ host: '127.0.0.1', port: 0, exclusive: true }, () => {
      server.off('error', reject);
      const address = server.address();
      if (address === null || typeof address === 'string') {
        reject(new Error(`expected a TCP address, got ${String(address)}`));
        return;
      }
      resolve(address.port);
    });
  });
}

export function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) {
      resolve();
      return;
    }
    server.close(() => resolve());
  });
}
