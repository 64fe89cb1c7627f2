// The filter that cuts the scheme off an `:authority` like `http://127.0.0.1:2379` (etcdctl 3.4's
// maintenance connections), which Node's HTTP/2 layer would refuse (docs/embedded-server.md,
// "Known differences"). Whatever it cannot decide on is forwarded as it came, for the HTTP/2 server
// to answer as it would have; a frame is held until it is whole.
import type { Socket } from 'node:net';
import { Duplex } from 'node:stream';
import {
  cutFragment,
  DEFAULT_MAX_HEADER_LIST_SIZE,
  encodeLiterals,
  FLAG_END_HEADERS,
  FLAG_END_STREAM,
  FRAME_CONTINUATION,
  FRAME_HEADER_BYTES,
  FRAME_HEADERS,
  HeaderBlockDecoder,
  type HeaderField,
  headerFrames,
  headersFragment,
  MAX_FRAME_PAYLOAD,
  MisplacedTableSizeUpdateError,
  type OpenBlock,
  PREFACE,
} from '@etcdkit/client/h2';

export { PREFACE };

const SCHEME = /^[A-Za-z][A-Za-z0-9+.-]*:\/\//;
/** The characters nghttp2 lets an authority have (no `/`: a path is refused). */
const AUTHORITY_CHARACTERS = /^[A-Za-z0-9\-._~!$&'()*+,;=:@[\]%]*$/;
/**
 * The longest header block held. A field takes at most 4 times what it counts in the header list
 * encoded (Huffman codes have up to 30 bits per octet; its integers fit in the 32 octets every
 * field counts), so a longer block is one the server refuses anyway. Without a limit a client
 * could send CONTINUATION frames for ever, all held here.
 */
export const MAX_HEADER_BLOCK = 4 * DEFAULT_MAX_HEADER_LIST_SIZE;

type Mode = 'inspect' | 'rewrite' | 'pass';

/** Whether a request's `:authority` has a scheme (`http://...`) or a path: the filter is needed. */
export function authorityNeedsRewrite(
  fields: readonly HeaderField[],
  onUnixSocket = false,
): boolean {
  const authority = fields.find((field) => field.name === ':authority');
  return (
    authority !== undefined && servableAuthority(authority.value, onUnixSocket) !== authority.value
  );
}

/**
 * The authority the HTTP/2 server accepts for `value`: without its scheme; on a unix socket,
 * `localhost` for what nghttp2 refuses (etcdctl 3.4 sends the socket's path, which grpc-go takes).
 */
function servableAuthority(value: string, onUnixSocket: boolean): string {
  const cut = value.replace(SCHEME, '');
  return onUnixSocket && !AUTHORITY_CHARACTERS.test(cut) ? 'localhost' : cut;
}

/**
 * Wraps a client socket for the HTTP/2 server so that an `:authority` with a scheme arrives as
 * `host:port`. Destroying the socket destroys the wrapper.
 */
export function acceptSchemeInAuthority(socket: Socket, onUnixSocket = false): Duplex {
  return new AuthorityRewriter(socket, onUnixSocket);
}

class AuthorityRewriter extends Duplex {
  private mode: Mode = 'inspect';
  private prefaceSeen = false;
  private pending: Buffer = Buffer.alloc(0);
  private block: OpenBlock | undefined;
  private readonly decoder = new HeaderBlockDecoder();

  constructor(
    private readonly socket: Socket,
    private readonly onUnixSocket: boolean,
  ) {
    super();
    socket.on('data', (chunk: Buffer) => this.receive(chunk));
    socket.on('end', () => this.receiveEnd());
    socket.on('close', () => this.destroy());
  }

  override _read(): void {
    this.socket.resume();
  }

  override _write(
    chunk: Buffer,
    _encoding: BufferEncoding,
    callback: (error?: Error | null) => void,
  ): void {
    this.socket.write(chunk, callback);
  }

  // Whatever the HTTP/2 server queued meanwhile goes out in one go, not a chunk per round trip.
  override _writev(
    chunks: { chunk: Buffer; encoding: BufferEncoding }[],
    callback: (error?: Error | null) => void,
  ): void {
    this.socket.cork();
    for (const [index, { chunk }] of chunks.entries()) {
      this.socket.write(chunk, index === chunks.length - 1 ? callback : undefined);
    }
    this.socket.uncork();
  }

  override _final(callback: (error?: Error | null) => void): void {
    this.socket.end();
    callback();
  }

  override _destroy(error: Error | null, callback: (error?: Error | null) => void): void {
    this.socket.destroy();
    callback(error);
  }

  private forward(bytes: Buffer): void {
    if (bytes.length > 0 && !this.push(bytes)) this.socket.pause();
  }

  private receive(chunk: Buffer): void {
    if (this.mode === 'pass') {
      this.forward(chunk);
      return;
    }
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    try {
      this.readFrames();
    } catch (error) {
      // A block with a table size update after a field goes over as it came even once blocks are
      // rewritten: the server's decoder refuses it whatever its table holds, so the client gets
      // the server's own answer (GOAWAY, COMPRESSION_ERROR), as without this filter, not a reset.
      if (this.mode === 'rewrite' && !(error instanceof MisplacedTableSizeUpdateError)) {
        // The server's view of this connection's headers is ours; without it nothing can go on.
        this.destroy();
        return;
      }
      // Not understood before anything was changed: hand it all over as it came.
      this.handOverAsReceived();
    }
  }

  /** Forwards the frames of the open block and all that follows, unchanged from now on. */
  private handOverAsReceived(): void {
    const held = this.block?.frames ?? [];
    this.block = undefined;
    for (const frame of held) this.forward(frame);
    this.passThrough();
  }

  /**
   * The client has sent all it will. Node's HTTP/2 server reads a frame as its octets arrive: of a
   * frame cut short it has taken the fields complete in it, or the start of a DATA payload, and at
   * the end of input it closes the session, with no GOAWAY. So what is held here for want of the
   * rest of a frame goes over before the end does, or the server would never see it.
   */
  private receiveEnd(): void {
    if (this.destroyed) return;
    if (this.mode === 'inspect') {
      // Nothing was changed yet: the server gets exactly what the client sent.
      this.handOverAsReceived();
    } else if (this.mode === 'rewrite' && !this.flushCutFrame()) {
      return;
    }
    this.push(null);
  }

  /**
   * On a rewritten connection, what to do with the frame the client's end cut short; false when
   * the connection is closed instead.
   */
  private flushCutFrame(): boolean {
    const cut = this.pending;
    this.pending = Buffer.alloc(0);
    const type = cut.length >= FRAME_HEADER_BYTES ? cut[3] : undefined;
    const block = this.block;
    this.block = undefined;
    if (block === undefined && type !== FRAME_HEADERS) {
      // Part of a frame header, or of a frame other than HEADERS: these octets mean the same to
      // the server as to the client.
      this.forward(cut);
      return true;
    }
    if (
      block !== undefined &&
      type !== undefined &&
      (type !== FRAME_CONTINUATION || (cut.readUInt32BE(5) & 0x7fff_ffff) !== block.streamId)
    ) {
      // The block was interrupted: closed, as when the interrupting frame is whole.
      this.destroy();
      return false;
    }
    // A header block cut short is encoded for the client's table, not the server's, so it cannot
    // go over as it is, and it can never become a request: nghttp2 drops it at the end of input,
    // and so does the filter (the server only misses resets it might send for fields in it). But
    // nghttp2 decodes fields as they arrive, and a size update after one ends the connection with
    // COMPRESSION_ERROR whatever its table holds: such a block goes over as it came, as whole.
    const fragments = [...(block?.fragments ?? [])];
    if (type !== undefined) fragments.push(cutFragment(cut));
    try {
      this.decoder.decode(Buffer.concat(fragments));
    } catch (error) {
      if (error instanceof MisplacedTableSizeUpdateError) {
        for (const frame of block?.frames ?? []) this.forward(frame);
        this.forward(cut);
      }
    }
    return true;
  }

  private readFrames(): void {
    if (!this.prefaceSeen) {
      // Checked as it arrives: a client that is not speaking HTTP/2 may send less than the
      // preface's 24 octets and wait, and must get the server's answer rather than silence.
      const head = this.pending.subarray(0, PREFACE.length);
      if (!head.equals(PREFACE.subarray(0, head.length))) {
        throw new Error('not an HTTP/2 connection preface');
      }
      if (head.length < PREFACE.length) return;
      this.prefaceSeen = true;
      this.forward(this.pending.subarray(0, PREFACE.length));
      this.pending = this.pending.subarray(PREFACE.length);
    }
    while (this.mode !== 'pass' && this.pending.length >= FRAME_HEADER_BYTES) {
      const length = this.pending.readUIntBE(0, 3);
      // The server refuses it as soon as it reads the frame header; waiting for up to 16 MiB of
      // payload first would hold the connection (and that memory) for nothing.
      if (length > MAX_FRAME_PAYLOAD) throw new Error('frame larger than the server allows');
      if (this.pending.length < FRAME_HEADER_BYTES + length) return;
      const unread = this.pending;
      const frame = unread.subarray(0, FRAME_HEADER_BYTES + length);
      this.pending = unread.subarray(FRAME_HEADER_BYTES + length);
      try {
        this.readFrame(frame);
      } catch (error) {
        // A frame refused before it joined the open block is still to be handed over (in inspect
        // mode), after that block's frames: put it back in front of what follows it.
        if (this.block?.frames.at(-1) !== frame) this.pending = unread;
        throw error;
      }
    }
    if (this.mode === 'pass') {
      const rest = this.pending;
      this.pending = Buffer.alloc(0);
      this.forward(rest);
    }
  }

  private readFrame(frame: Buffer): void {
    const type = frame[3]!;
    const flags = frame[4]!;
    const streamId = frame.readUInt32BE(5) & 0x7fff_ffff;
    const payload = frame.subarray(FRAME_HEADER_BYTES);
    if (this.block !== undefined) {
      if (type !== FRAME_CONTINUATION || streamId !== this.block.streamId) {
        throw new Error('a header block was interrupted');
      }
      this.block.length += payload.length;
      if (this.block.length > MAX_HEADER_BLOCK) throw new Error('header block too large');
      this.block.fragments.push(payload);
      this.block.frames.push(frame);
    } else if (type === FRAME_HEADERS) {
      const { fragment, priority } = headersFragment(flags, payload);
      this.block = {
        streamId,
        endStream: (flags & FLAG_END_STREAM) !== 0,
        priority,
        fragments: [fragment],
        frames: [frame],
        length: fragment.length,
      };
    } else {
      this.forward(frame);
      return;
    }
    if (flags & FLAG_END_HEADERS) {
      // Cleared only once handled: a block that fails to decode is still there to forward as is.
      this.completeBlock(this.block);
      this.block = undefined;
    }
  }

  private completeBlock(block: OpenBlock): void {
    const fields = this.decoder.decode(Buffer.concat(block.fragments));
    if (this.mode === 'inspect') {
      if (!authorityNeedsRewrite(fields, this.onUnixSocket)) {
        for (const frame of block.frames) this.forward(frame);
        this.passThrough();
        return;
      }
      this.mode = 'rewrite';
    }
    const fixed: HeaderField[] = fields.map((field) =>
      field.name === ':authority'
        ? { ...field, value: servableAuthority(field.value, this.onUnixSocket) }
        : field,
    );
    for (const frame of headerFrames(block, encodeLiterals(fixed))) this.forward(frame);
  }

  /** Forwards everything from now on unchanged, without reading it. */
  private passThrough(): void {
    this.mode = 'pass';
    const rest = this.pending;
    this.pending = Buffer.alloc(0);
    this.forward(rest);
  }
}
