// SIGINT, SIGTERM and SIGHUP to the etcdkit process: they end a wait, are passed on to CMD, and
// make the command release what it holds and exit.

/** The signals a supervisor passes on to CMD. */
const FORWARDED = ['SIGINT', 'SIGTERM', 'SIGHUP'] as const;

/** Listens to the termination signals while the command runs. */
export class Interrupts implements Disposable {
  readonly #controller = new AbortController();
  readonly #listeners = new Set<(signal: NodeJS.Signals) => void>();
  #first: NodeJS.Signals | undefined;
  readonly #onSignal = (signal: NodeJS.Signals): void => {
    this.#first ??= signal;
    this.#controller.abort(signal);
    for (const listener of this.#listeners) listener(signal);
  };

  constructor() {
    for (const signal of FORWARDED) process.on(signal, this.#onSignal);
  }

  /** Aborts on the first signal. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** The first signal received, if any. */
  get received(): NodeJS.Signals | undefined {
    return this.#first;
  }

  /** Calls `listener` with every signal until the returned function is called. */
  each(listener: (signal: NodeJS.Signals) => void): () => void {
    this.#listeners.add(listener);
    return () => this.#listeners.delete(listener);
  }

  /** Back to Node's default handling. */
  [Symbol.dispose](): void {
    for (const signal of FORWARDED) process.off(signal, this.#onSignal);
    this.#listeners.clear();
  }
}
