// The HPACK header blocks of gRPC responses. The blocks every call shares (the response headers,
// OK trailers) go through each connection's ResponseBlockEncoder, which puts their five fields in
// the peer's dynamic table once and then sends them as indexes, as grpc-go does; every other block
// is static-table entries and literals without indexing, valid in any table state. The fields are
// those grpc-js's server sends.
import {
  DEFAULT_HEADER_TABLE_SIZE,
  STATIC_TABLE,
  writeIndexingLiteral,
  writeInteger,
  writeLiteral,
} from '@etcdkit/client/h2';

/** Static table indexes (RFC 7541, Appendix A). */
const STATUS_200 = 8;
const NAME_STATUS = 8;
const NAME_CONTENT_TYPE = 31;
/** What an entry costs in the dynamic table beyond its name and value (RFC 7541, 4.1). */
const ENTRY_OVERHEAD = 32;

/** The content type of every response, as grpc-js's server sends it. */
export const RESPONSE_CONTENT_TYPE = 'application/grpc+proto';

const LONE_SURROGATE = /[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g;

/** A header field: a static table name index, or a lower-case name. */
type Name = number | string;

/** The response headers before the first message: encoded per connection. */
export const RESPONSE_HEADERS = 0;
/** The trailers of a call that ended well: encoded per connection. */
export const OK_TRAILERS = 1;
/** A block every call shares, encoded by the connection as it queues it. */
export type SharedBlock = typeof RESPONSE_HEADERS | typeof OK_TRAILERS;
/** A response header block: encoded already (literals only), or one the connection encodes. */
export type ResponseBlock = Buffer | SharedBlock;

/** A field of the shared blocks, and its place in the encoder's insertion record. */
interface SharedField {
  readonly id: number;
  readonly name: Name;
  readonly value: string;
  /** Its size as a dynamic table entry. */
  readonly size: number;
}

function sharedField(id: number, name: Name, spelled: string, value: string): SharedField {
  return { id, name, value, size: spelled.length + value.length + ENTRY_OVERHEAD };
}

/** The fields of each shared block, by SharedBlock (`:status 200` aside, a static entry). */
const SHARED_FIELDS: readonly (readonly SharedField[])[] = [
  [
    sharedField(0, NAME_CONTENT_TYPE, 'content-type', RESPONSE_CONTENT_TYPE),
    sharedField(1, 'grpc-accept-encoding', 'grpc-accept-encoding', 'identity,deflate,gzip'),
    sharedField(2, 'grpc-encoding', 'grpc-encoding', 'identity'),
  ],
  [
    sharedField(3, 'grpc-status', 'grpc-status', '0'),
    sharedField(4, 'grpc-message', 'grpc-message', 'OK'),
  ],
];

/** The dynamic table the five shared fields take: below it, nothing is indexed. */
export const SHARED_TABLE_BYTES = SHARED_FIELDS.flat().reduce((sum, field) => sum + field.size, 0);

/**
 * The HPACK encoder state of one connection: which shared fields the peer's decoder holds, in the
 * order it added them. Blocks must be encoded in the order they are written to the socket, since
 * that is the order the peer decodes them in. Only the five shared fields are ever inserted and
 * they fit the table, so none is evicted and their indexes only shift as later ones are added.
 */
export class ResponseBlockEncoder {
  /** Each shared field's insertion number (0 first), -1 while the peer's table lacks it. */
  readonly #inserted = [-1, -1, -1, -1, -1];
  #insertions = 0;
  /** The five fields fit the peer's table: the missing ones are inserted. */
  #indexing = true;
  /** The largest table the peer's decoder allows us: its setting, only ever lowered here. */
  #tableSize = DEFAULT_HEADER_TABLE_SIZE;
  /** A dynamic table size update the next block must open with (RFC 7541, 4.2). */
  #sizeUpdate: number | undefined;
  /** Each shared block as it encodes now, until the table or its size changes. */
  readonly #cache: (Buffer | undefined)[] = [undefined, undefined];

  /**
   * The peer's SETTINGS_HEADER_TABLE_SIZE, from the moment its ACK is queued. A lower one is
   * signalled at the start of the next block; below the shared fields' size the table is
   * forgotten and every field goes as a literal without indexing. A higher one is not used.
   */
  peerTableSize(size: number): void {
    if (size >= this.#tableSize) return;
    this.#tableSize = size;
    this.#sizeUpdate = size;
    this.#cache.fill(undefined);
    if (size < SHARED_TABLE_BYTES) {
      this.#indexing = false;
      this.#inserted.fill(-1);
    }
  }

  /** The octets of `block`, as they go on the socket next. */
  encode(block: ResponseBlock): Buffer {
    if (typeof block !== 'number') {
      const update = this.#sizeUpdate;
      if (update === undefined) return block;
      this.#sizeUpdate = undefined;
      const bytes: number[] = [];
      writeInteger(bytes, 0x20, 5, update);
      return Buffer.concat([Buffer.from(bytes), block]);
    }
    const cached = this.#cache[block];
    if (cached !== undefined) return cached;
    const bytes: number[] = [];
    let changed = false;
    if (this.#sizeUpdate !== undefined) {
      writeInteger(bytes, 0x20, 5, this.#sizeUpdate);
      this.#sizeUpdate = undefined;
      changed = true;
    }
    if (block === RESPONSE_HEADERS) writeInteger(bytes, 0x80, 7, STATUS_200);
    for (const field of SHARED_FIELDS[block]!) {
      const inserted = this.#inserted[field.id]!;
      if (inserted >= 0) {
        // The newest entry is the first after the static table (RFC 7541, 2.3.3).
        writeInteger(bytes, 0x80, 7, STATIC_TABLE.length + this.#insertions - inserted);
      } else if (this.#indexing) {
        writeIndexingLiteral(bytes, field.name, field.value);
        this.#inserted[field.id] = this.#insertions++;
        changed = true;
      } else writeLiteral(bytes, field.name, field.value);
    }
    const encoded = Buffer.from(bytes);
    // A block that changed the table shifts every index: nothing cached holds any more.
    if (changed) this.#cache.fill(undefined);
    else this.#cache[block] = encoded;
    return encoded;
  }
}

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
export function trailersBlock(code: number, message: string): ResponseBlock {
  if (code === 0 && message === 'OK') return OK_TRAILERS;
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
