// The order in which one server's connections write what a tick produced. Each connection gathers
// its frames and writes them in one go at the end of the tick; across connections, those written
// to while handling another connection's frames go first, and the connection whose frames were
// being handled goes last. What a request changed for others (a released lock's waiter, a watch's
// event) so leaves before the requester's own answer, as in etcd, where a commit's events reach
// the watch streams during apply, before the writer's handler has its answer. On one host the
// first write wakes its reader, which may take this process's core before the next write is made
// (docs/embedded-server.md, "How calls are served").

/** A connection with frames to write. */
export interface Flushable {
  /** Writes what is queued, in one socket write when it can. */
  flush(): void;
}

/** Flushes the connections written to in one tick, others' before the requester's. */
export class WriteOrder {
  #others: Flushable[] = [];
  #requesters: Flushable[] = [];
  #scheduled = false;

  /**
   * `connection` has frames to write (once per tick: it calls this for its first frame);
   * `requester`: it was written to while its own frames were being handled.
   */
  schedule(connection: Flushable, requester: boolean): void {
    (requester ? this.#requesters : this.#others).push(connection);
    if (this.#scheduled) return;
    this.#scheduled = true;
    process.nextTick(this.#flush);
  }

  readonly #flush = (): void => {
    this.#scheduled = false;
    const others = this.#others;
    const requesters = this.#requesters;
    this.#others = [];
    this.#requesters = [];
    for (let i = 0; i < others.length; i++) others[i]!.flush();
    for (let i = 0; i < requesters.length; i++) requesters[i]!.flush();
  };
}
