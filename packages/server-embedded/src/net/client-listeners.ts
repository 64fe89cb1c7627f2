// The client port(s): TCP (or TLS) listeners the server owns, handing each connection to gRPC.
// Owning the sockets, rather than letting the gRPC server bind the port, lets the server drop every
// connection at once (clients see a real disconnect and reconnect), stop listening and listen
// again on the same port (a restart that keeps the data), and log connections.
import { lstat, unlink } from 'node:fs/promises';
import {
  createServer as createTcpServer,
  connect as netConnect,
  type Server,
  type Socket,
} from 'node:net';
import { createServer as createTlsServer, type TLSSocket, type TlsOptions } from 'node:tls';
import type { ServerLogger } from '../logger.js';
import {
  bindHost,
  type ClientUrl,
  ClientUrlError,
  formatClientUrl,
  hostPort,
} from './client-urls.js';

/** What the listeners need. */
export interface ClientListenersOptions {
  /** Where to listen; a port 0 is replaced by the port the system chose on the first listen. */
  readonly urls: readonly ClientUrl[];
  /** Node.js TLS server options for the `https` URLs; required when there is one. */
  readonly tls: TlsOptions | undefined;
  /** Takes over a connection (after the TLS handshake, for https): the gRPC server. */
  readonly accept: (connection: Socket) => void;
  readonly logger: ServerLogger;
}

/** The listeners of the client URLs and every connection they accepted. */
export class ClientListeners {
  #bound: ClientUrl[];
  #servers: Server[] = [];
  // Raw sockets, and for https also their TLS sockets: destroying both ends a connection whether
  // or not its handshake finished.
  readonly #connections = new Set<Socket>();
  readonly #tls: TlsOptions | undefined;
  readonly #accept: (connection: Socket) => void;
  readonly #logger: ServerLogger;

  constructor(options: ClientListenersOptions) {
    if (options.tls === undefined) {
      const secure = options.urls.find((url) => url.scheme === 'https');
      if (secure !== undefined) {
        throw new ClientUrlError(
          `TLS key/cert must be provided for client url ${formatClientUrl(secure)} with HTTPS scheme`,
        );
      }
    }
    this.#bound = [...options.urls];
    this.#tls = options.tls;
    this.#accept = options.accept;
    this.#logger = options.logger;
  }

  /** The URLs listened on, with the ports actually bound once {@link listen} resolved. */
  get urls(): readonly ClientUrl[] {
    return this.#bound;
  }

  /** Whether the server is accepting connections. */
  get listening(): boolean {
    return this.#servers.length > 0;
  }

  /** Connections open now (each counted once, TLS or not). */
  get connectionCount(): number {
    let count = 0;
    for (const socket of this.#connections) if (!isTlsLayer(socket)) count++;
    return count;
  }

  /**
   * Listens on every URL: the first time on the ports given (0: a free one), afterwards on the same
   * ports again. When one URL cannot be bound, the others are closed and the error is thrown.
   */
  async listen(): Promise<void> {
    if (this.listening) return;
    const servers: Server[] = [];
    try {
      for (const [index, url] of this.#bound.entries()) {
        const server = this.#createServer(url.scheme, index);
        servers.push(server);
        const port = await listenOn(server, url);
        this.#bound[index] = { ...url, port };
        this.#logger.info('listening for client requests', {
          address: hostPort(this.#bound[index]),
          tls: url.scheme === 'https',
        });
      }
    } catch (error) {
      await Promise.all(servers.map(closeServer));
      throw error;
    }
    this.#servers = servers;
  }

  /** Stops listening and destroys every connection; resolves once all of them have closed. */
  async close(): Promise<void> {
    const servers = this.#servers;
    this.#servers = [];
    const closed = Promise.all(servers.map(closeServer));
    // A destroyed socket reports 'close' a tick later; wait for it, so that a restart that listens
    // again right away has really ended every old connection first.
    const sockets = [...this.#connections].map(
      (socket) =>
        new Promise<void>((resolve) => {
          if (socket.closed) resolve();
          else socket.once('close', () => resolve());
        }),
    );
    this.dropConnections();
    await Promise.all([closed, ...sockets]);
  }

  /** Destroys every open connection now, still listening; returns how many there were. */
  dropConnections(): number {
    const count = this.connectionCount;
    for (const socket of this.#connections) socket.destroy();
    this.#connections.clear();
    return count;
  }

  #createServer(scheme: ClientUrl['scheme'], index: number): Server {
    // Read when logging: the port of a URL given as 0 is known only once it is bound.
    const address = (): string => hostPort(this.#bound[index]!);
    const track = (socket: Socket): void => {
      this.#connections.add(socket);
      socket.once('close', () => this.#connections.delete(socket));
    };
    const onConnection = (socket: Socket): void => {
      track(socket);
      // A unix socket's peer has no address.
      const remote =
        socket.remoteAddress === undefined
          ? 'unix'
          : `${socket.remoteAddress}:${socket.remotePort}`;
      this.#logger.debug('accepted client connection', {
        address: address(),
        'remote-addr': remote,
      });
      socket.once('close', () => {
        this.#logger.debug('closed client connection', {
          address: address(),
          'remote-addr': remote,
        });
      });
      // A peer resetting the connection must not surface as an unhandled error.
      socket.on('error', () => {});
    };
    if (scheme !== 'https') {
      const server = createTcpServer({ noDelay: true });
      server.on('connection', (socket) => {
        onConnection(socket);
        this.#accept(socket);
      });
      return server;
    }
    const server = createTlsServer({ ...this.#tls });
    server.on('connection', onConnection);
    server.on('secureConnection', (socket: TLSSocket) => {
      track(socket);
      this.#accept(socket);
    });
    server.on('tlsClientError', (error, socket) => {
      this.#logger.debug('rejected client TLS handshake', {
        address: address(),
        'remote-addr': `${socket.remoteAddress}:${socket.remotePort}`,
        error: error.message.trim(),
      });
      socket.destroy();
    });
    return server;
  }
}

function isTlsLayer(socket: Socket): boolean {
  return 'encrypted' in socket && socket.encrypted === true;
}

/**
 * Listens on `url`. A unix socket file left by a server that is gone (nothing answers on it) is
 * removed first, as etcd does; a live socket or any other file at the path fails with EADDRINUSE.
 * Closing the server removes its socket file (Node.js does).
 */
async function listenOn(server: Server, url: ClientUrl): Promise<number> {
  if (url.path !== undefined && (await isStaleSocket(url.path))) await unlink(url.path);
  return new Promise((resolve, reject) => {
    server.once('error', reject);
    const address =
      url.path !== undefined ? { path: url.path } : { host: bindHost(url), port: url.port };
    server.listen(address, () => {
      server.off('error', reject);
      const address = server.address();
      resolve(typeof address === 'object' && address !== null ? address.port : url.port);
    });
  });
}

/** Whether `path` is a unix socket no server accepts connections on. */
async function isStaleSocket(path: string): Promise<boolean> {
  try {
    if (!(await lstat(path)).isSocket()) return false;
  } catch {
    return false;
  }
  return new Promise((resolve) => {
    const probe = netConnect({ path });
    probe.once('connect', () => {
      probe.destroy();
      resolve(false);
    });
    probe.once('error', (error: NodeJS.ErrnoException) => resolve(error.code === 'ECONNREFUSED'));
  });
}

function closeServer(server: Server): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) {
      resolve();
      return;
    }
    server.close(() => resolve());
  });
}
