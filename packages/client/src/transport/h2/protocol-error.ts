// A connection error one side of an HTTP/2 connection detected (RFC 9113, 5.4.1): the GOAWAY
// code to end the connection with, and what to say. Every check of the connection core throws it;
// the read loop turns it into GOAWAY and the end of the connection.

/** A connection error: GOAWAY with `code`, then the connection ends. */
export class H2ProtocolError extends Error {
  /**
   * `debug`: the GOAWAY's debug data (the message unless given; '' where nghttp2 sends none).
   * `streamId`: the stream whose header block failed, counted as received by a server.
   * `cause`: set only when an unexpected error (a defect, not the peer's) ended the connection.
   */
  constructor(
    /** The HTTP/2 error code (RFC 9113, 7). */
    readonly code: number,
    message: string,
    readonly debug: string = message,
    readonly streamId = 0,
    cause?: unknown,
  ) {
    super(message, cause === undefined ? undefined : { cause });
    this.name = 'H2ProtocolError';
  }
}
