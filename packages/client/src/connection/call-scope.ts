// The lifetime of one call or stream: its deadline, and one AbortSignal that fires when the caller
// aborts, the stream is cancelled, or the connection closes, remembering which of them it was.
import { AbortedError, ClientClosedError, type EtcdError } from '../errors.js';

type Why = 'caller' | 'closed' | 'cancelled';

/** Links the caller's signal and the connection's closing signal for one call. */
export class CallScope {
  /** Absolute deadline, epoch ms; Infinity when there is none. */
  readonly deadline: number;
  /** The deadline as the caller set it, in ms from the call's start; Infinity when there is none. */
  readonly timeoutMs: number;
  /**
   * The call's own signal, made only when the closing signal alone cannot stand for the call: the
   * caller gave a signal, or the scope can be cancelled. A unary call without a signal (most calls)
   * uses the closing signal itself, which spares an AbortController and two listeners per call.
   */
  readonly #controller: AbortController | undefined;
  readonly #caller: AbortSignal | undefined;
  readonly #closing: AbortSignal;
  #why: Why | undefined;
  #onCaller: (() => void) | undefined;
  #onClosing: (() => void) | undefined;

  /**
   * @param caller the caller's signal, if any
   * @param closing fires when the connection closes
   * @param timeoutMs deadline from now, in ms; Infinity for none
   * @param cancellable whether {@link cancel} may be called (streams)
   */
  constructor(
    caller: AbortSignal | undefined,
    closing: AbortSignal,
    timeoutMs: number,
    cancellable: boolean,
  ) {
    this.timeoutMs = Number.isFinite(timeoutMs) ? timeoutMs : Number.POSITIVE_INFINITY;
    this.deadline = Number.isFinite(timeoutMs) ? Date.now() + timeoutMs : Number.POSITIVE_INFINITY;
    this.#caller = caller;
    this.#closing = closing;
    if (caller === undefined && !cancellable) {
      this.#controller = undefined;
      return;
    }
    this.#controller = new AbortController();
    if (closing.aborted) this.#abort('closed', closing.reason);
    else if (caller?.aborted) this.#abort('caller', caller.reason);
    else {
      const onClosing = () => this.#abort('closed', closing.reason);
      this.#onClosing = onClosing;
      closing.addEventListener('abort', onClosing, { once: true });
      if (caller) {
        const onCaller = () => this.#abort('caller', caller.reason);
        this.#onCaller = onCaller;
        caller.addEventListener('abort', onCaller, { once: true });
      }
    }
  }

  /** Fires when the call must stop. Its reason is the caller's reason when the caller aborted. */
  get signal(): AbortSignal {
    return this.#controller ? this.#controller.signal : this.#closing;
  }

  /** Whether {@link signal} is the connection's closing signal, shared by calls and outliving them. */
  get signalIsShared(): boolean {
    return this.#controller === undefined;
  }

  /** True once the call must stop. */
  get aborted(): boolean {
    return this.#controller ? this.#why !== undefined : this.#closing.aborted;
  }

  /** The deadline as the transport takes it (undefined when there is none). */
  get transportDeadline(): number | undefined {
    return Number.isFinite(this.deadline) ? this.deadline : undefined;
  }

  /** Stops the call on behalf of its owner (a stream's `cancel()`). Only for cancellable scopes. */
  cancel(): void {
    this.#abort('cancelled', new AbortedError({ message: 'the stream was cancelled' }));
  }

  /** The typed error for the reason the call stopped. */
  abortError(): EtcdError {
    const why = this.#controller ? this.#why : this.#closing.aborted ? 'closed' : undefined;
    switch (why) {
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
    if (this.#onClosing) this.#closing.removeEventListener('abort', this.#onClosing);
    if (this.#onCaller) this.#caller?.removeEventListener('abort', this.#onCaller);
    this.#onClosing = undefined;
    this.#onCaller = undefined;
  }

  #abort(why: Why, reason: unknown): void {
    if (this.#why !== undefined || !this.#controller) return;
    this.#why = why;
    this.dispose();
    this.#controller.abort(reason);
  }
}

/** Resolves like `promise`, or rejects with the signal's reason as soon as it aborts. */
export function raceAbort<T>(promise: Promise<T>, signal: AbortSignal): Promise<T> {
  if (signal.aborted) return Promise.reject(signal.reason);
  return new Promise<T>((resolve, reject) => {
    const onAbort = () => reject(signal.reason);
    signal.addEventListener('abort', onAbort, { once: true });
    promise.then(
      (value) => {
        signal.removeEventListener('abort', onAbort);
        resolve(value);
      },
      (error: unknown) => {
        signal.removeEventListener('abort', onAbort);
        reject(error);
      },
    );
  });
}
