// The outgoing side of one watch stream: responses wait here in the order they were produced and
// are written to the gRPC call while it accepts writes. A call that stops draining (the client does
// not read, HTTP/2 flow control closes) makes write() return false; the queue then holds what
// comes next until 'drain'. Responses carrying watch results are capped (etcd's watch channel holds
// 128): past that, the watchable store is told "no" and moves the watcher to catch up from history
// later, so a stuck client costs bounded memory and never holds up a writer.
//
// A response is rendered into wire messages only when it is written, so what depends on the
// moment of sending (prev_kv, read like etcd's send loop does) is as fresh as in etcd.

/** The part of a gRPC server call the queue writes to. */
export interface MessageWriter<M> {
  /** Writes one message; false asks the caller to wait for 'drain' before writing more. */
  write(message: M): boolean;
  once(event: 'drain', listener: () => void): unknown;
}

/** A response waiting to be written. */
export interface QueuedResponse<M> {
  /** The wire messages to write, produced when the response's turn comes (fragments: several). */
  render(): readonly M[];
}

/** etcd's watch channel length (chanBufLen): watch results a stream may have waiting. */
export const WATCH_RESPONSE_CAPACITY = 128;

/** An ordered, backpressure-aware queue of responses in front of a gRPC call. */
export class ResponseQueue<M> {
  readonly #writer: MessageWriter<M>;
  readonly #capacity: number;
  readonly #onWritten: () => void;
  // A FIFO: written items are cleared and skipped by `head`, and the array is compacted now and
  // then, so a long backlog costs no quadratic shifting.
  readonly #items: ({ response: QueuedResponse<M>; counted: boolean } | undefined)[] = [];
  #head = 0;
  #counted = 0;
  #waitingForDrain = false;
  #closed = false;

  /**
   * `capacity` caps the watch results waiting; `onWritten` runs after queued responses went out, so
   * the stream can let congested watchers catch up or resume reading requests.
   */
  constructor(writer: MessageWriter<M>, capacity: number, onWritten: () => void) {
    this.#writer = writer;
    this.#capacity = capacity;
    this.#onWritten = onWritten;
  }

  /** Whether a watch result would be taken now. */
  get accepting(): boolean {
    return !this.#closed && this.#counted < this.#capacity;
  }

  /** Responses waiting, of any kind. */
  get length(): number {
    return this.#items.length - this.#head;
  }

  /**
   * Queues a control response (created, canceled): always taken, since dropping one would break
   * the protocol. The stream bounds how many it produces by pausing its reads instead.
   */
  push(response: QueuedResponse<M>): void {
    if (this.#closed) return;
    this.#items.push({ response, counted: false });
    this.#flush();
  }

  /** Queues a watch result; false (and nothing queued) when the queue is at capacity. */
  offer(response: QueuedResponse<M>): boolean {
    if (!this.accepting) return false;
    this.#items.push({ response, counted: true });
    this.#counted++;
    this.#flush();
    return true;
  }

  /** Drops everything waiting; later pushes are ignored. */
  close(): void {
    this.#closed = true;
    this.#items.length = 0;
    this.#head = 0;
    this.#counted = 0;
  }

  #flush(): void {
    if (this.#waitingForDrain || this.#closed) return;
    let wrote = false;
    let writable = true;
    while (writable && this.#head < this.#items.length && !this.#closed) {
      const item = this.#items[this.#head]!;
      this.#items[this.#head] = undefined;
      this.#head++;
      if (item.counted) this.#counted--;
      for (const message of item.response.render()) {
        // A false return still took the message; the rest of a fragmented response follows it.
        if (!this.#writer.write(message)) writable = false;
      }
      wrote = true;
    }
    if (this.#head === this.#items.length) {
      this.#items.length = 0;
      this.#head = 0;
    } else if (this.#head > 1024 && this.#head * 2 > this.#items.length) {
      this.#items.splice(0, this.#head);
      this.#head = 0;
    }
    if (!writable && !this.#closed) {
      this.#waitingForDrain = true;
      this.#writer.once('drain', () => {
        this.#waitingForDrain = false;
        this.#flush();
      });
    }
    if (wrote && !this.#closed) this.#onWritten();
  }
}
