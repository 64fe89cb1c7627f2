// How gRPC over HTTP/2 reports an outcome: the `grpc-status` / `grpc-message` trailers (or headers,
// for a trailers-only response), HTTP statuses of proxies that never reached a gRPC server, and
// RST_STREAM codes of streams ended without a status. Also the `grpc-timeout` request header.
import type { IncomingHttpHeaders } from 'node:http2';
import { constants } from 'node:http2';
import { GrpcStatus, type Metadata } from './types.js';

/** A gRPC status as received: code, details and the response metadata. */
export interface ReceivedStatus {
  readonly code: GrpcStatus;
  readonly details: string;
  readonly metadata: Metadata;
}

/** Headers that are protocol, not metadata: never returned as metadata nor sent from it. */
const RESERVED = new Set([
  'content-type',
  'te',
  'user-agent',
  'grpc-status',
  'grpc-message',
  'grpc-status-details-bin',
  'grpc-timeout',
  'grpc-encoding',
  'grpc-accept-encoding',
  'content-length',
  'date',
]);

/** True for a metadata key that would clash with the protocol's own headers. */
export function isReservedHeader(key: string): boolean {
  return key.startsWith(':') || RESERVED.has(key);
}

/**
 * The `grpc-timeout` header value for `ms` milliseconds (rounded up, at least 1): at most eight
 * digits and a unit, in the finest unit that fits.
 */
export function encodeTimeout(ms: number): string {
  const millis = Math.max(1, Math.ceil(ms));
  if (millis < 100_000_000) return `${millis}m`;
  const seconds = Math.ceil(millis / 1000);
  if (seconds < 100_000_000) return `${seconds}S`;
  const minutes = Math.ceil(seconds / 60);
  if (minutes < 100_000_000) return `${minutes}M`;
  return `${Math.min(99_999_999, Math.ceil(minutes / 60))}H`;
}

/** `grpc-message` is percent-encoded UTF-8; a malformed escape leaves the text as received. */
export function decodeGrpcMessage(value: string): string {
  if (!value.includes('%')) return value;
  try {
    return decodeURIComponent(value);
  } catch {
    return value;
  }
}

function single(value: string | string[] | undefined): string | undefined {
  return Array.isArray(value) ? value.join(',') : value;
}

/** The application metadata among response headers and trailers (later ones win). */
export function responseMetadata(
  ...blocks: ReadonlyArray<IncomingHttpHeaders | undefined>
): Metadata {
  const out: Record<string, string> = {};
  for (const block of blocks) {
    if (!block) continue;
    for (const [key, value] of Object.entries(block)) {
      if (value === undefined || isReservedHeader(key)) continue;
      out[key] = single(value)!;
    }
  }
  return out;
}

/**
 * The status in a header block that carries `grpc-status` (trailers, or the headers of a
 * trailers-only response), or undefined when it carries none. An unparsable code is Unknown.
 */
export function statusFromHeaders(
  block: IncomingHttpHeaders,
  metadata: Metadata,
): ReceivedStatus | undefined {
  const raw = single(block['grpc-status']);
  if (raw === undefined) return undefined;
  const parsed = /^\d+$/.test(raw) ? Number(raw) : Number.NaN;
  const code =
    Number.isInteger(parsed) && parsed >= 0 && parsed <= 16
      ? (parsed as GrpcStatus)
      : GrpcStatus.Unknown;
  const message = single(block['grpc-message']);
  const details = message === undefined ? '' : decodeGrpcMessage(message);
  return {
    code,
    details: code === GrpcStatus.Unknown && details === '' ? `invalid grpc-status ${raw}` : details,
    metadata,
  };
}

/** The gRPC status of an HTTP response that is not a gRPC answer (a proxy's error page...). */
export function statusFromHttp(httpStatus: number): { code: GrpcStatus; details: string } {
  const details = `Received HTTP status code ${httpStatus}`;
  switch (httpStatus) {
    case 400:
      return { code: GrpcStatus.Internal, details };
    case 401:
      return { code: GrpcStatus.Unauthenticated, details };
    case 403:
      return { code: GrpcStatus.PermissionDenied, details };
    case 404:
      return { code: GrpcStatus.Unimplemented, details };
    case 429:
    case 502:
    case 503:
    case 504:
      return { code: GrpcStatus.Unavailable, details };
    default:
      return { code: GrpcStatus.Unknown, details };
  }
}

/** The gRPC status of a stream reset by the server (RST_STREAM) before any status arrived. */
export function statusFromReset(rstCode: number): { code: GrpcStatus; details: string } {
  switch (rstCode) {
    case constants.NGHTTP2_NO_ERROR:
      return {
        code: GrpcStatus.Internal,
        details: `Received RST_STREAM with code ${rstCode} (Call ended without gRPC status)`,
      };
    case constants.NGHTTP2_REFUSED_STREAM:
      return { code: GrpcStatus.Unavailable, details: 'Stream refused by server' };
    case constants.NGHTTP2_CANCEL:
      return { code: GrpcStatus.Cancelled, details: 'Call cancelled' };
    case constants.NGHTTP2_ENHANCE_YOUR_CALM:
      return {
        code: GrpcStatus.ResourceExhausted,
        details: 'Bandwidth exhausted or memory limit exceeded',
      };
    case constants.NGHTTP2_INADEQUATE_SECURITY:
      return { code: GrpcStatus.PermissionDenied, details: 'Protocol not secure enough' };
    default:
      return { code: GrpcStatus.Internal, details: `Received RST_STREAM with code ${rstCode}` };
  }
}
