// A promise resolved from outside: what a paused server's calls, a leaderless member's calls and
// a cluster member's exit wait on, each opened by an event elsewhere (resume, a new leader, stop).

/** A wait that some later event ends for every waiter at once. */
export interface Latch {
  /** Resolves once {@link Latch.open} is called. */
  readonly opened: Promise<void>;
  /** Lets every waiter on {@link Latch.opened} go on; later calls do nothing. */
  open(): void;
}

/** A closed latch. */
export function closedLatch(): Latch {
  let open = (): void => {};
  const opened = new Promise<void>((resolve) => {
    open = resolve;
  });
  return { opened, open };
}
