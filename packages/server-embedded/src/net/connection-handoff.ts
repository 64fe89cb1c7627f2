// Which way a plain-HTTP connection reaches the HTTP/2 server: as its socket (native reads and
// writes), or through the authority filter when its first header block carries a scheme in
// :authority (docs/embedded-server.md, "How calls are served").
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import {
  FLAG_END_HEADERS,
  FRAME_CONTINUATION,
  FRAME_HEADER_BYTES,
  FRAME_HEADERS,
  HeaderBlockDecoder,
  headersFragment,
  MAX_FRAME_PAYLOAD,
} from '@etcdkit/client/h2';
import {
  acceptSchemeInAuthority,
  authorityNeedsRewrite,
  MAX_HEADER_BLOCK,
  PREFACE,
} from './authority-rewriter.js';

const FRAME_SETTINGS = 0x4;
const FRAME_PING = 0x6;
const FLAG_ACK = 0x1;
const PING_PAYLOAD_BYTES = 8;
/** A SETTINGS frame with no parameters: every setting keeps its HTTP/2 default. */
const EMPTY_SETTINGS = Buffer.from([0, 0, 0, FRAME_SETTINGS, 0, 0, 0, 0, 0]);

/**
 * Hands the plain connection `socket` to `accept` once its first request shows whether it needs
 * the authority filter: the socket itself, or the filter over it.
 */
export function acceptPlainConnection(socket: Socket, accept: (connection: Duplex) => void): void {
  new Handoff(socket, accept);
}

type Route = 'direct' | 'filtered';

class Handoff {
  private pending: Buffer = Buffer.alloc(0);
  /** What the HTTP/2 server is to read, in order, once the connection is handed over. */
  private readonly kept: Buffer[] = [];
  private prefaceSeen = false;
  private ackRemoved = false;
  private route: Route | undefined;
  private block:
    | { readonly streamId: number; readonly fragments: Buffer[]; length: number }
    | undefined;
  private readonly onData = (chunk: Buffer): void => this.receive(chunk);
  private readonly onEnd = (): void => {
    this.socket.destroy();
  };

  constructor(
    private readonly socket: Socket,
    private readonly accept: (connection: Duplex) => void,
  ) {
    socket.on('data', this.onData);
    // A client that ends before its first request made none; there is nothing to answer.
    socket.once('end', this.onEnd);
  }

  private receive(chunk: Buffer): void {
    this.pending = this.pending.length === 0 ? chunk : Buffer.concat([this.pending, chunk]);
    if (!this.prefaceSeen) {
      const head = this.pending.subarray(0, PREFACE.length);
      if (!head.equals(PREFACE.subarray(0, head.length))) {
        this.handOver('direct');
        return;
      }
      if (head.length < PREFACE.length) return;
      this.prefaceSeen = true;
      // Only to a client that speaks HTTP/2, as the session would: it answers the preface.
      this.socket.write(EMPTY_SETTINGS);
      this.kept.push(this.pending.subarray(0, PREFACE.length));
      this.pending = this.pending.subarray(PREFACE.length);
    }
    while (this.pending.length >= FRAME_HEADER_BYTES) {
      const length = this.pending.readUIntBE(0, 3);
      if (length > MAX_FRAME_PAYLOAD) {
        this.handOver('direct');
        return;
      }
      if (this.pending.length < FRAME_HEADER_BYTES + length) return;
      const frame = this.pending.subarray(0, FRAME_HEADER_BYTES + length);
      this.pending = this.pending.subarray(FRAME_HEADER_BYTES + length);
      this.readFrame(frame);
      if (this.route !== undefined && this.ackRemoved) {
        this.handOver(this.route);
        return;
      }
    }
  }

  private readFrame(frame: Buffer): void {
    const type = frame[3]!;
    const flags = frame[4]!;
    const streamId = frame.readUInt32BE(5) & 0x7fff_ffff;
    const length = frame.length - FRAME_HEADER_BYTES;
    if (type === FRAME_SETTINGS && flags & FLAG_ACK && !this.ackRemoved && streamId === 0) {
      this.ackRemoved = true;
      return;
    }
    if (type === FRAME_PING && !(flags & FLAG_ACK) && streamId === 0) {
      if (length === PING_PAYLOAD_BYTES) {
        const ack = Buffer.from(frame);
        ack[4] = FLAG_ACK;
        this.socket.write(ack);
        return;
      }
    }
    this.kept.push(frame);
    if (this.route !== undefined) return;
    const payload = frame.subarray(FRAME_HEADER_BYTES);
    if (this.block !== undefined) {
      if (type !== FRAME_CONTINUATION || streamId !== this.block.streamId) {
        this.route = 'direct';
        return;
      }
      this.block.fragments.push(payload);
      this.block.length += payload.length;
    } else if (type === FRAME_HEADERS) {
      try {
        const { fragment } = headersFragment(flags, payload);
        this.block = { streamId, fragments: [fragment], length: fragment.length };
      } catch {
        this.route = 'direct';
        return;
      }
    } else {
      return;
    }
    if (this.block.length > MAX_HEADER_BLOCK) {
      this.route = 'direct';
    } else if (flags & FLAG_END_HEADERS) {
      try {
        const fields = new HeaderBlockDecoder().decode(Buffer.concat(this.block.fragments));
        this.route = authorityNeedsRewrite(fields, onUnixSocket(this.socket))
          ? 'filtered'
          : 'direct';
      } catch {
        // The session refuses the block as it would have.
        this.route = 'direct';
      }
    }
  }

  private handOver(route: Route): void {
    const { socket } = this;
    socket.off('data', this.onData);
    socket.off('end', this.onEnd);
    socket.pause();
    const held = Buffer.concat([...this.kept, this.pending]);
    if (held.length > 0) socket.unshift(held);
    this.accept(
      route === 'filtered' ? acceptSchemeInAuthority(socket, onUnixSocket(socket)) : socket,
    );
  }
}

/** A connection accepted on a unix socket has no remote address (a TCP one always has). */
function onUnixSocket(socket: Socket): boolean {
  return socket.remoteAddress === undefined;
}
