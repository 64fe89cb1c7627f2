// The request side of gRPC message framing on the server: the shared reader
// (@etcdkit/client/h2's grpc-message.ts) with what grpc-js's server adds, inflating a compressed
// message with the call's grpc-encoding, with grpc-js's words when it cannot. A message over the
// limit is refused in etcd's words (grpc-go's), not the shared reader's (grpc-js's).
import { gunzipSync, inflateSync } from 'node:zlib';
import { GrpcMessageError, MessageReader } from '@etcdkit/client/h2';
import { GrpcCode } from '../../errors.js';

/** Splits one request's DATA into messages, inflating compressed ones. */
export class RequestMessageReader extends MessageReader {
  readonly #encoding: string;

  constructor(maxBytes: number, encoding: string) {
    super(maxBytes);
    this.#encoding = encoding;
  }

  override push(chunk: Buffer): Buffer[] {
    try {
      return super.push(chunk);
    } catch (error) {
      throw etcdWording(error);
    }
  }

  /** Compressed messages are accepted here and judged once complete, as grpc-js does. */
  protected override compressedMessage(): void {}

  protected override decompress(bytes: Buffer): Buffer {
    const options = { maxOutputLength: this.maxBytes };
    try {
      if (this.#encoding === 'gzip') return gunzipSync(bytes, options);
      if (this.#encoding === 'deflate') return inflateSync(bytes, options);
    } catch (error) {
      if (error instanceof RangeError) {
        throw new GrpcMessageError(
          GrpcCode.RESOURCE_EXHAUSTED,
          `Received message that decompresses to a size larger than ${this.maxBytes}`,
        );
      }
      throw new GrpcMessageError(GrpcCode.INTERNAL, 'Failed to decompress message');
    }
    throw new GrpcMessageError(
      GrpcCode.UNIMPLEMENTED,
      `Received message compressed with unsupported encoding "${this.#encoding}"`,
    );
  }
}

/** The shared reader's "Received message larger than max (X vs Y)", as grpc-go words it. */
const GRPC_JS_TOO_LARGE = /^Received message larger than max \((\d+) vs (\d+)\)$/;

/** `error` with etcd's wording when it is the size refusal, else unchanged. */
function etcdWording(error: unknown): unknown {
  if (!(error instanceof GrpcMessageError)) return error;
  const sizes = GRPC_JS_TOO_LARGE.exec(error.message);
  if (sizes === null) return error;
  return new GrpcMessageError(
    GrpcCode.RESOURCE_EXHAUSTED,
    `grpc: received message larger than max (${sizes[1]} vs. ${sizes[2]})`,
  );
}
