// The HPACK header blocks of gRPC responses: static-table entries and literals without indexing
// only, so no block depends on (or changes) the client's dynamic table, and the blocks every call
// shares (the response headers, OK trailers) are encoded once per process. The fields are those
// grpc-js's server sends.
import { writeInteger, writeLiteral } from '@etcdkit/client/h2';

/** Static table indexes (RFC 7541, Appendix A). */
const STATUS_200 = 8;
const NAME_STATUS = 8;
const NAME_CONTENT_TYPE = 31;

/** The content type of every response, as grpc-js's server sends it. */
export const RESPONSE_CONTENT_TYPE = 'application/grpc+proto';

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** A header field: a static table name index, or a lower-case name. */
type Name = number | string;

/** Encodes `:status` and `fields` (the status as an indexed 200 when it is 200). */
export function encodeResponseBlock(
  status: number | undefined,
  fields: ReadonlyArray<readonly [Name, string]>,
): Buffer {
  const bytes: number[] = [];
  if (status === 200) writeInteger(bytes, 0x80, 7, STATUS_200);
  else if (status !== undefined) writeLiteral(bytes, NAME_STATUS, String(status));
  for (const [name, value] of fields) writeLiteral(bytes, name, value);
  return Buffer.from(bytes);
}

/** The response headers before the first message. */
export const RESPONSE_HEADERS_BLOCK = encodeResponseBlock(200, [
  [NAME_CONTENT_TYPE, RESPONSE_CONTENT_TYPE],
  ['grpc-accept-encoding', 'identity,deflate,gzip'],
  ['grpc-encoding', 'identity'],
]);

/** The trailers of a call that ended well, as grpc-js sends them. */
export const OK_TRAILERS_BLOCK = encodeResponseBlock(undefined, [
  ['grpc-status', '0'],
  ['grpc-message', 'OK'],
]);

/**
 * grpc-message as grpc-js's server writes it: percent-encoded with encodeURI, which leaves the
 * printable ASCII gRPC allows and escapes the rest (a lone surrogate, which encodeURI refuses,
 * becomes U+FFFD first).
 */
export function encodeGrpcMessage(message: string): string {
  try {
    return encodeURI(message);
  } catch {
    return encodeURI(message.replace(LONE_SURROGATE, '\uFFFD'));
  }
}

/** Trailers ending a call that sent response headers. */
export function trailersBlock(code: number, message: string): Buffer {
  if (code === 0 && message === 'OK') return OK_TRAILERS_BLOCK;
  return encodeResponseBlock(undefined, [
    ['grpc-status', String(code)],
    ['grpc-message', encodeGrpcMessage(message)],
  ]);
}

/** A trailers-only response (an error before any message): one block, sent with END_STREAM. */
export function trailersOnlyBlock(code: number, message: string): Buffer {
  return encodeResponseBlock(200, [
    [NAME_CONTENT_TYPE, RESPONSE_CONTENT_TYPE],
    ['grpc-status', String(code)],
    ['grpc-message', encodeGrpcMessage(message)],
  ]);
}

/** A response refused at the HTTP level (415 for a request that is not gRPC), as grpc-js does. */
export function httpStatusBlock(status: number): Buffer {
  return encodeResponseBlock(status, []);
}
