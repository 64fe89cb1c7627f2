// Opens the client port of a gRPC server from the server options: which URLs to listen on and
// advertise, and TLS. The gRPC server never binds a port itself: connections come from our own
// listeners (see client-listeners.ts for why), handed to its acceptor.
import type { ServerLogger } from '../logger.js';
import { ClientListeners, type ClientListenersOptions } from './client-listeners.js';
import {
  type ClientUrl,
  ClientUrlError,
  formatClientUrl,
  parseClientUrl,
  parseListenUrl,
} from './client-urls.js';
import { type ServerTlsOptions, tlsServerOptions } from './server-tls.js';

/** The options that shape the client port (a subset of the server's options). */
export interface ClientPortOptions {
  readonly port?: number;
  readonly listenClientUrls?: readonly string[];
  readonly advertiseClientUrls?: readonly string[];
  readonly tls?: ServerTlsOptions;
}

/** A listening client port. */
export interface ClientPort {
  readonly listeners: ClientListeners;
  /** The URLs MemberList reports: the advertised ones, by default those listened on. */
  readonly advertisedUrls: readonly string[];
}

/** Where the listeners hand connections: a gRPC server's connection acceptor. */
export interface ConnectionAcceptor {
  readonly accept: ClientListenersOptions['accept'];
}

/** Validates the options, listens on every URL and hands connections to `acceptor`. */
export async function openClientPort(
  acceptor: ConnectionAcceptor,
  options: ClientPortOptions,
  logger: ServerLogger,
): Promise<ClientPort> {
  const urls = listenUrls(options);
  if (options.tls !== undefined) {
    for (const url of urls.filter((url) => url.scheme !== 'https')) {
      logger.warn('serving plain HTTP on an http or unix URL although TLS is configured', {
        address: formatClientUrl(url),
      });
    }
  }
  const advertised = (options.advertiseClientUrls ?? []).map((url) =>
    formatClientUrl(parseClientUrl(url)),
  );
  const listeners = new ClientListeners({
    urls,
    tls: options.tls === undefined ? undefined : tlsServerOptions(options.tls),
    accept: acceptor.accept,
    logger,
  });
  await listeners.listen();
  return {
    listeners,
    advertisedUrls: advertised.length > 0 ? advertised : listeners.urls.map(formatClientUrl),
  };
}

function listenUrls(options: ClientPortOptions): ClientUrl[] {
  const given = options.listenClientUrls;
  if (given === undefined || given.length === 0) {
    const scheme = options.tls === undefined ? 'http' : 'https';
    return [{ scheme, host: '127.0.0.1', port: options.port ?? 0 }];
  }
  if (options.port !== undefined) {
    throw new ClientUrlError('give either port or listenClientUrls, not both');
  }
  return given.map(parseListenUrl);
}
