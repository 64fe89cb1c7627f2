import { connect, createServer, type Socket } from 'node:net';
import { closeServer, listenOnFreePort } from './internal/ports.js';

/** Where a {@link startTcpProxy} forwards to: a URL, `host:port`, or a loopback port. */
export type ProxyTarget = string | number | { readonly host: string; readonly port: number };

/** A TCP forwarder between a client and a server, for fault injection. */
export interface TcpProxy {
  /** Proxy URL with the target's scheme, e.g. `http://127.0.0.1:PORT`. */
  readonly endpoint: string;
  readonly port: number;
  /** Client connections currently open through the proxy. */
  readonly connectionCount: number;
  /** Connections accepted since start. */
  readonly totalConnections: number;
  /** Resets every live connection, on both sides. New connections are still accepted. */
  cutAll(): void;
  /**
   * Stops forwarding in both directions; sockets stay open and bytes wait in buffers. New
   * connections are accepted but not dialled through. Simulates a half-open peer.
   */
  pause(): void;
  /** Forwards again, including what was held back during {@link pause}. */
  resume(): void;
  /** Stops listening and destroys every connection. */
  close(): Promise<void>;
}

interface Link {
  readonly client: Socket;
  server: Socket | undefined;
}

/** Starts a TCP proxy on a free 127.0.0.1 port that forwards to `target`. */
export async function startTcpProxy(target: ProxyTarget): Promise<TcpProxy> {
  const { host, port: targetPort, scheme } = parseTarget(target);
  const links = new Set<Link>();
  let paused = false;
  let total = 0;

  const dial = (link: Link) => {
    const server = connect({ host, port: targetPort });
    link.server = server;
    forward(link.client, server, () => paused);
    forward(server, link.client, () => paused);
    server.on('error', () => link.client.destroy());
    server.on('close', () => link.client.destroy());
  };

  const listener = createServer({ pauseOnConnect: true }, (client) => {
    total++;
    const link: Link = { client, server: undefined };
    links.add(link);
    client.on('error', () => link.server?.destroy());
    client.on('close', () => {
      links.delete(link);
      link.server?.destroy();
    });
    if (!paused) dial(link);
  });
  const port = await listenOnFreePort(listener);

  return {
    endpoint: `${scheme}://127.0.0.1:${port}`,
    port,
    get connectionCount() {
      return links.size;
    },
    get totalConnections() {
      return total;
    },
    cutAll() {
      for (const link of links) {
        link.client.resetAndDestroy();
        if (link.server !== undefined && !link.server.destroyed) link.server.resetAndDestroy();
        links.delete(link);
      }
    },
    pause() {
      paused = true;
      for (const link of links) {
        link.client.pause();
        link.server?.pause();
      }
    },
    resume() {
      paused = false;
      for (const link of links) {
        if (link.server === undefined) dial(link);
        link.client.resume();
        link.server?.resume();
      }
    },
    async close() {
      const closed = closeServer(listener);
      for (const link of links) {
        link.client.destroy();
        link.server?.destroy();
      }
      links.clear();
      await closed;
    },
  };
}

/** Copies `from` to `to` with backpressure, holding everything while `isPaused()`. */
function forward(from: Socket, to: Socket, isPaused: () => boolean): void {
  from.on('data', (chunk: Buffer) => {
    if (!to.write(chunk)) from.pause();
  });
  to.on('drain', () => {
    if (!isPaused()) from.resume();
  });
  from.on('end', () => to.end());
  if (!isPaused()) from.resume();
}

function parseTarget(target: ProxyTarget): { host: string; port: number; scheme: string } {
  if (typeof target === 'number') return { host: '127.0.0.1', port: target, scheme: 'http' };
  if (typeof target === 'object') return { host: target.host, port: target.port, scheme: 'http' };
  if (target.includes('://')) {
    const url = new URL(target);
    const scheme = url.protocol.replace(/:$/, '');
    const port = url.port === '' ? (scheme === 'https' ? 443 : 80) : Number(url.port);
    return { host: url.hostname.replace(/^\[|\]$/g, ''), port, scheme };
  }
  const separator = target.lastIndexOf(':');
  if (separator <= 0) throw new Error(`proxy target must be a URL or host:port, got ${target}`);
  return {
    host: target.slice(0, separator),
    port: Number(target.slice(separator + 1)),
    scheme: 'http',
  };
}
