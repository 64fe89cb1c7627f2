// What a server's GOAWAY says, in words a caller can act on: its error code by name and its debug
// text, and whether it reports a broken protocol (a new connection would meet the same fate).
import { H2ProtocolError } from './h2/protocol-error.js';

/** HTTP/2 error codes by number (RFC 9113, 7). */
const ERROR_CODE_NAMES = [
  'NO_ERROR',
  'PROTOCOL_ERROR',
  'INTERNAL_ERROR',
  'FLOW_CONTROL_ERROR',
  'SETTINGS_TIMEOUT',
  'STREAM_CLOSED',
  'FRAME_SIZE_ERROR',
  'REFUSED_STREAM',
  'CANCEL',
  'COMPRESSION_ERROR',
  'CONNECT_ERROR',
  'ENHANCE_YOUR_CALM',
  'INADEQUATE_SECURITY',
  'HTTP_1_1_REQUIRED',
] as const;

/**
 * Codes by which a server says the connection broke the protocol. INTERNAL_ERROR, CANCEL,
 * REFUSED_STREAM and ENHANCE_YOUR_CALM (etcd's "too_many_pings") are about the server's state or
 * load, which a later connection may not meet.
 */
const PROTOCOL_CODES = new Set<number>([1, 3, 4, 5, 6, 9, 10, 12, 13]);

/** A server's GOAWAY, as a connection reports it to its calls. */
export interface Goaway {
  readonly code: number;
  readonly lastStreamId: number;
  /** Like `GOAWAY PROTOCOL_ERROR (code 1, last stream 5): "bad frame"`. */
  readonly text: string;
  /** The code says the protocol was broken. */
  readonly protocolError: boolean;
}

/** Whether an HTTP/2 error `code` (of a GOAWAY or RST_STREAM) says the protocol was broken. */
export function isProtocolErrorCode(code: number): boolean {
  return PROTOCOL_CODES.has(code);
}

/** The name of an HTTP/2 error code, or `code N` for one RFC 9113 does not define. */
export function errorCodeName(code: number): string {
  return ERROR_CODE_NAMES[code] ?? `code ${code}`;
}

/** A GOAWAY of `code`, `lastStreamId` and `debug` data, described. */
export function goawayOf(code: number, lastStreamId: number, debug: Buffer | undefined): Goaway {
  const name = ERROR_CODE_NAMES[code];
  const said = debug && debug.length > 0 ? `: ${JSON.stringify(debug.toString('utf8'))}` : '';
  return {
    code,
    lastStreamId,
    text: `the server sent GOAWAY ${name ?? 'with an unknown code'} (code ${code}, last stream ${lastStreamId})${said}`,
    protocolError: isProtocolErrorCode(code),
  };
}

/**
 * Whether `reason`, the error a connection ended with, is a protocol violation the client found:
 * the h2 connection's close error caused by an H2ProtocolError (h2-connection.ts), node:http2's
 * NGHTTP2_PROTOCOL_ERROR-style session errors.
 */
export function isProtocolViolation(reason: unknown): boolean {
  if (!(reason instanceof Error)) return false;
  if (reason.cause instanceof H2ProtocolError) return true;
  const code = (reason as { code?: unknown }).code;
  return code === 'ERR_HTTP2_ERROR' && /protocol error/i.test(reason.message);
}
