// The HPACK header block of a gRPC request, as the h2 transport sends it: static-table entries and
// literals without indexing only, so the block never depends on (nor changes) the server's dynamic
// table and the part every call of a method shares can be encoded once per connection.
import { writeInteger, writeLiteral } from './hpack.js';

/** Static table indexes (RFC 7541, Appendix A) the request block uses. */
const METHOD_POST = 3;
const SCHEME_HTTP = 6;
const SCHEME_HTTPS = 7;
const NAME_AUTHORITY = 1;
const NAME_PATH = 4;
const NAME_CONTENT_TYPE = 31;
const NAME_USER_AGENT = 58;

/** What every request of one connection says alike. */
export interface RequestTemplate {
  readonly scheme: 'http' | 'https';
  readonly authority: string;
  readonly contentType: string;
  readonly userAgent: string;
}

/**
 * The fields every call of `path` sends on a connection: method, scheme, path, authority,
 * content-type, te and user-agent.
 */
export function requestPrefix(template: RequestTemplate, path: string): Buffer {
  const bytes: number[] = [];
  writeInteger(bytes, 0x80, 7, METHOD_POST);
  writeInteger(bytes, 0x80, 7, template.scheme === 'https' ? SCHEME_HTTPS : SCHEME_HTTP);
  writeLiteral(bytes, NAME_PATH, path);
  writeLiteral(bytes, NAME_AUTHORITY, template.authority);
  writeLiteral(bytes, NAME_CONTENT_TYPE, template.contentType);
  writeLiteral(bytes, 'te', 'trailers');
  writeLiteral(bytes, NAME_USER_AGENT, template.userAgent);
  return Buffer.from(bytes);
}

/** `prefix` followed by the call's own fields (lower-case names), as one header block. */
export function requestBlock(
  prefix: Buffer,
  fields: ReadonlyArray<readonly [string, string]>,
): Buffer {
  if (fields.length === 0) return prefix;
  const bytes: number[] = [];
  for (const [name, value] of fields) writeLiteral(bytes, name, value);
  const block = Buffer.allocUnsafe(prefix.length + bytes.length);
  prefix.copy(block, 0);
  block.set(bytes, prefix.length);
  return block;
}
