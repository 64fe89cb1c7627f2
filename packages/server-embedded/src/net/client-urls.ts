// Client URLs as etcd takes them (`--listen-client-urls`, `--advertise-client-urls`): a scheme,
// a host and an explicit port, or a unix socket. etcd binds only to IP addresses or `localhost`;
// the scheme decides whether the port speaks TLS.
import { isIP } from 'node:net';

/** A URL the server listens on or advertises. */
export interface ClientUrl {
  /** `unix`: plaintext gRPC on a unix socket, at `path`. */
  readonly scheme: 'http' | 'https' | 'unix';
  /** The host as written: an IP (IPv6 without brackets) or a name; empty for unix. */
  readonly host: string;
  /** The port; 0 in a listen URL means a free port chosen when the server starts; 0 for unix. */
  readonly port: number;
  /** The socket file of a unix URL, absolute or relative to the working directory. */
  readonly path?: string;
}

/** A client URL or TLS setting the server cannot use. */
export class ClientUrlError extends Error {
  /** Stable identifier of the failure. */
  readonly code = 'INVALID_CLIENT_URL';

  constructor(message: string) {
    super(message);
    this.name = 'ClientUrlError';
  }
}

// scheme://host:port with an optional trailing slash; an IPv6 host is in brackets.
const URL_PATTERN = /^([a-z][a-z0-9+.-]*):\/\/(\[[0-9A-Fa-f:.]+\]|[^/:?#[\]@]+):(\d{1,5})\/?$/;

/**
 * Parses a URL the server may advertise: `http` or `https`, a host and a port; or a unix socket,
 * `unix:///absolute/path` or `unix://relative/path` (the path is what follows `//`, as etcd's Go
 * client reads it; etcd 3.4 itself takes only `unix://name:port`, a file of that name). URLs with a
 * path or without a port are refused, as etcd refuses them for client URLs.
 */
export function parseClientUrl(text: string): ClientUrl {
  const unix = /^unix(s?):\/\/(.*)$/.exec(text.trim());
  if (unix !== null) return parseUnixUrl(text, unix[1] === 's', unix[2]!);
  const match = URL_PATTERN.exec(text.trim());
  if (match === null) {
    throw new ClientUrlError(
      `invalid client URL ${JSON.stringify(text)}: expected http(s)://host:port`,
    );
  }
  const scheme = match[1]!;
  if (scheme !== 'http' && scheme !== 'https') {
    throw new ClientUrlError(
      `unsupported scheme in client URL ${JSON.stringify(text)}: only http and https are served`,
    );
  }
  const port = Number(match[3]);
  if (port > 65_535) throw new ClientUrlError(`invalid port in client URL ${JSON.stringify(text)}`);
  const host = match[2]!.replace(/^\[(.*)\]$/, '$1');
  return { scheme, host, port };
}

function parseUnixUrl(text: string, secure: boolean, path: string): ClientUrl {
  if (secure) {
    throw new ClientUrlError(
      `unsupported scheme in client URL ${JSON.stringify(text)}: unixs (TLS over a unix socket) is not served; use unix`,
    );
  }
  if (path === '' || path === '/' || /[?#\0]/.test(path)) {
    throw new ClientUrlError(
      `invalid client URL ${JSON.stringify(text)}: expected unix:///absolute/path or unix://relative/path`,
    );
  }
  return { scheme: 'unix', host: '', port: 0, path };
}

/** Parses a URL to listen on: as {@link parseClientUrl}, and the host must be an IP or localhost. */
export function parseListenUrl(text: string): ClientUrl {
  const url = parseClientUrl(text);
  if (url.scheme === 'unix') return url;
  if (url.host !== 'localhost' && isIP(url.host) === 0) {
    throw new ClientUrlError(
      `expected IP in URL for binding (${text}): listen URLs take an IP address or localhost`,
    );
  }
  return url;
}

/** `scheme://host:port`, with brackets around an IPv6 host; `unix://path` for a unix socket. */
export function formatClientUrl(url: ClientUrl): string {
  return `${url.scheme}://${hostPort(url)}`;
}

/** `host:port`, with brackets around an IPv6 host; the socket path for unix. */
export function hostPort(url: ClientUrl): string {
  if (url.path !== undefined) return url.path;
  const host = isIP(url.host) === 6 ? `[${url.host}]` : url.host;
  return `${host}:${url.port}`;
}

/**
 * The address to bind for `url`. `localhost` binds 127.0.0.1 (as etcd's Go resolver does),
 * never `::1`, so the server listens on the same address on every machine.
 */
export function bindHost(url: ClientUrl): string {
  return url.host === 'localhost' ? '127.0.0.1' : url.host;
}
