// A stream's responses as an async iterator with bounded buffering: the stream is paused while
// `highWaterMark` responses wait for the consumer, so a slow consumer slows the server down (HTTP/2
// flow control) instead of growing memory without bound. Both transports buffer their streams so.

/** What a ResponseQueue controls of the stream that fills it. */
export interface FlowControl {
  pause(): void;
  resume(): void;
}

/**
 * Responses pushed by a stream, iterated by its consumer. The outcome (`end()`, with or without an
 * error) is reported after every response pushed before it: an error is thrown once, and iteration
 * is then done. `onDone` runs exactly once when iteration ends for any reason (end, error,
 * `return()` from `break`).
 */
export class ResponseQueue<T> implements AsyncIterator<T> {
  readonly #items: T[] = [];
  readonly #flow: FlowControl;
  readonly #onDone: () => void;
  readonly #highWaterMark: number;
  #ended = false;
  #error: Error | undefined;
  #finished = false;
  #paused = false;
  #wake: (() => void) | undefined;

  constructor(flow: FlowControl, onDone: () => void, highWaterMark = 16) {
    this.#flow = flow;
    this.#onDone = onDone;
    this.#highWaterMark = highWaterMark;
  }

  /** One response; the stream is paused once `highWaterMark` of them wait. */
  push(response: T): void {
    this.#items.push(response);
    if (this.#items.length >= this.#highWaterMark && !this.#paused && !this.#ended) {
      this.#paused = true;
      this.#flow.pause();
    }
    this.#notify();
  }

  /**
   * The stream failed with `error` (kept unless an error was already recorded) but has not ended:
   * it is resumed, so that whatever it still buffers is delivered before the error.
   */
  fail(error: Error): void {
    this.#error ??= error;
    this.#paused = false;
    this.#flow.resume();
    this.#notify();
  }

  /** The stream ended: with `error` unless one was recorded before, or cleanly. */
  end(error?: Error): void {
    this.#ended = true;
    this.#error ??= error;
    this.#notify();
  }

  async next(): Promise<IteratorResult<T>> {
    while (!this.#finished) {
      if (this.#items.length > 0) {
        const value = this.#items.shift() as T;
        if (this.#paused && this.#items.length <= this.#highWaterMark / 2) {
          this.#paused = false;
          this.#flow.resume();
        }
        return { done: false, value };
      }
      if (this.#ended) {
        const error = this.#error;
        this.#finish();
        if (error) throw error;
        break;
      }
      await new Promise<void>((resolve) => {
        this.#wake = resolve;
      });
    }
    return { done: true, value: undefined };
  }

  async return(): Promise<IteratorResult<T>> {
    this.#finish();
    return { done: true, value: undefined };
  }

  #notify(): void {
    const wake = this.#wake;
    this.#wake = undefined;
    wake?.();
  }

  #finish(): void {
    if (this.#finished) return;
    this.#finished = true;
    this.#items.length = 0;
    this.#onDone();
  }
}
