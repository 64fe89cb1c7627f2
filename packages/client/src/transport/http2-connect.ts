// How the HTTP/2 transport reaches an endpoint: its address and TLS settings, the TCP or TLS socket,
// and the HTTP/2 handshake over it.
import * as http2 from 'node:http2';
import { isIP, connect as netConnect } from 'node:net';
import type { Duplex } from 'node:stream';
import { connect as tlsConnect } from 'node:tls';
import type { Endpoint } from './channel-call.js';
import { serverIdentity } from './tls-identity.js';
import type { ChannelOptions } from './types.js';

export type { Endpoint };

/** A connection attempt that has not completed its HTTP/2 handshake by then is abandoned. */
export const CONNECT_TIMEOUT_MS = 20_000;

/** The endpoint of a channel's options. */
export function endpointOf(options: ChannelOptions): Endpoint {
  const path = unixSocketPath(options.target);
  if (path !== undefined) {
    // A unix socket has no host name; grpc-go and grpc-js send `localhost` as the authority.
    return { host: 'localhost', port: 0, path, authority: 'http://localhost', tls: undefined };
  }
  const { host, port } = parseTarget(options.target);
  const authorityHost = options.tls?.serverName ?? (isIP(host) === 6 ? `[${host}]` : host);
  return {
    host,
    port,
    authority: `${options.tls ? 'https' : 'http'}://${authorityHost}:${port}`,
    tls: options.tls,
  };
}

/** The socket path of a unix target (`unix:///abs`, `unix:rel`), or undefined for `host:port`. */
function unixSocketPath(target: string): string | undefined {
  if (!target.startsWith('unix:')) return undefined;
  const rest = target.slice('unix:'.length);
  return rest.startsWith('//') ? rest.slice(2) : rest;
}

/** Splits `host:port` (`[v6]:port` for IPv6) into the parts sockets take. */
function parseTarget(target: string): { host: string; port: number } {
  const url = new URL(`http://${target}`);
  const host = url.hostname.startsWith('[') ? url.hostname.slice(1, -1) : url.hostname;
  return { host, port: url.port === '' ? 80 : Number(url.port) };
}

function pem(value: Uint8Array | string | undefined): Buffer | string | undefined {
  if (value === undefined || typeof value === 'string') return value;
  return Buffer.from(value.buffer, value.byteOffset, value.byteLength);
}

/**
 * Opens the TCP socket, or the TLS one (offering ALPN h2) when the endpoint has TLS settings, or
 * the unix socket of a unix endpoint.
 */
export function dial({ host, port, path, tls }: Endpoint): Duplex {
  if (path !== undefined) return netConnect({ path });
  const socket = tls
    ? tlsConnect({
        host,
        port,
        ca: pem(tls.ca),
        cert: pem(tls.cert),
        key: pem(tls.key),
        ...serverIdentity(host, tls),
        ALPNProtocols: ['h2'],
      })
    : netConnect({ host, port });
  socket.setNoDelay(true);
  return socket;
}

/**
 * Dials `endpoint` and starts an HTTP/2 session over the socket. Then either `onReady` is called
 * once the handshake completed (the server's SETTINGS arrived), or `onFailed` with why it did not:
 * the socket or session failed or closed first, or no handshake within CONNECT_TIMEOUT_MS; a failed
 * attempt's session and socket are destroyed. Returns the session (unref'd), which the caller may
 * destroy to abandon the attempt.
 */
export function connectSession(
  endpoint: Endpoint,
  onReady: (session: http2.ClientHttp2Session, socket: Duplex) => void,
  onFailed: (reason: string) => void,
): http2.ClientHttp2Session {
  const socket = dial(endpoint);
  const session = http2.connect(endpoint.authority, {
    createConnection: () => socket,
    settings: { enablePush: false },
    // Node's default session memory cap (10 MB) would refuse streams while large messages are
    // buffered; the receive limit and flow control bound memory instead.
    maxSessionMemory: Number.MAX_SAFE_INTEGER,
  });
  session.unref();
  const timer = setTimeout(
    () => fail(new Error(`no HTTP/2 handshake within ${CONNECT_TIMEOUT_MS} ms`)),
    CONNECT_TIMEOUT_MS,
  );
  timer.unref();
  const cleanup = () => {
    clearTimeout(timer);
    session.off('remoteSettings', onSettings);
    session.off('error', fail);
    session.off('close', onClose);
    // A TLS alert (say, a refused client certificate) reaches the socket, not the session.
    socket.off('error', fail);
    socket.off('close', onClose);
  };
  const onSettings = () => {
    cleanup();
    onReady(session, socket);
  };
  const onClose = () => fail(new Error('connection closed before the HTTP/2 handshake'));
  const fail = (error: Error) => {
    cleanup();
    // Errors after this one (a destroyed socket's) must not go unhandled.
    session.on('error', () => {});
    socket.on('error', () => {});
    session.destroy();
    socket.destroy();
    onFailed(error.message || String(error));
  };
  session.once('remoteSettings', onSettings);
  session.once('error', fail);
  session.once('close', onClose);
  socket.once('error', fail);
  socket.once('close', onClose);
  return session;
}
