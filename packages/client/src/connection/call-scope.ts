// The lifetime of one call or stream: its deadline, and one AbortSignal that fires when the caller
// aborts, the stream is cancelled, or the connection closes, remembering which of them it was.
import { AbortedError, ClientClosedError, type EtcdError } from '../errors.js';

type Why = 'caller' | 'closed' | 'cancelled';

/** Links the caller's signal and the connection's closing signal for one call. */
export class CallScope {
  /** Absolute deadline, epoch ms; Infinity when there is none. */
  readonly deadline: number;
  readonly #controller = new AbortController();
  readonly #caller: AbortSignal | undefined;
  readonly #closing: AbortSignal;
  #why: Why | undefined;
  readonly #onCaller = () => this.#abort('caller', this.#caller?.reason);
  readonly #onClosing = () => this.#abort('closed', this.#closing.reason);

  /**
   * @param caller the caller's signal, if any
   * @param closing fires when the connection closes
   * @param timeoutMs deadline from now, in ms; Infinity for none
   */
  constructor(caller: AbortSignal | undefined, closing: AbortSignal, timeoutMs: number) {
    this.deadline = Number.isFinite(timeoutMs) ? Date.now() + timeoutMs : Number.POSITIVE_INFINITY;
    this.#caller = caller;
    this.#closing = closing;
    if (closing.aborted) this.#onClosing();
    else if (caller?.aborted) this.#onCaller();
    else {
      closing.addEventListener('abort', this.#onClosing, { once: true });
      caller?.addEventListener('abort', this.#onCaller, { once: true });
    }
  }

  /** Fires when the call must stop. Its reason is the caller's reason when the caller aborted. */
  get signal(): AbortSignal {
    return this.#controller.signal;
  }

  /** True once the call must stop. */
  get aborted(): boolean {
    return this.#why !== undefined;
  }

  /** The deadline as the transport takes it (undefined when there is none). */
  get transportDeadline(): number | undefined {
    return Number.isFinite(this.deadline) ? this.deadline : undefined;
  }

  /** Stops the call on behalf of its owner (a stream's `cancel()`). */
  cancel(): void {
    this.#abort('cancelled', new AbortedError({ message: 'the stream was cancelled' }));
  }

  /** The typed error for the reason the call stopped. */
  abortError(): EtcdError {
    switch (this.#why) {
      case 'closed':
        return new ClientClosedError();
      case 'caller':
        return new AbortedError({ cause: this.#caller?.reason });
      default:
        return new AbortedError({ message: 'the stream was cancelled' });
    }
  }

  /** Removes the listeners from the caller's and the connection's signals. */
  dispose(): void {
    this.#closing.removeEventListener('abort', this.#onClosing);
    this.#caller?.removeEventListener('abort', this.#onCaller);
  }

  #abort(why: Why, reason: unknown): void {
    if (this.#why !== undefined) return;
    this.#why = why;
    this.dispose();
    this.#controller.abort(reason);
  }
}
