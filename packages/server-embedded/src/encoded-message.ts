// A response message handed to a gRPC call already in its protobuf encoding: the call writes its
// bytes as they are. A watch's catch-up encodes its events straight from the history (issue
// 28.1), with no message object for protobufjs to encode again.

/** A message in wire form, written by a call instead of encoding an object. */
export class EncodedMessage {
  readonly bytes: Uint8Array;

  constructor(bytes: Uint8Array) {
    this.bytes = bytes;
  }
}
