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
   * The call's own signal, made only when something asks for {@link signal} and the closing signal
   * alone cannot stand for the call: the caller gave a signal, or the scope can be cancelled. A
   * unary call without a signal uses the closing signal itself, and one whose transport takes both
   * signals ({@link callerSignal}) never makes it: that spares an AbortController and two
   * listeners per call.
   */
  #controller: AbortController | undefined;
  readonly #caller: AbortSignal | undefined;
  readonly #closing: AbortSignal;
  readonly #cancellable: boolean;
  #why: Why | undefined;
  /** The error of a cancelled scope, made once: cancel() and abortError() both hand it out. */
  #cancelled: AbortedError | undefined;
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
    this.#cancellable = cancellable;
    if (cancellable) this.#link();
  }

  /** Makes the call's own signal, fired by the caller's signal, the closing one or cancel(). */
  #link(): AbortController {
    const controller = new AbortController();
    this.#controller = controller;
    // Already stopped (an abort seen through callerSignal before the signal was asked for).
    if (this.#why !== undefined) controller.abort(this.#reason(this.#why));
    else if (this.#closing.aborted) this.#abort('closed', this.#closing.reason);
    else if (this.#caller?.aborted) this.#abort('caller', this.#caller.reason);
    else {
      const closing = this.#closing;
      const onClosing = () => this.#abort('closed', closing.reason);
      this.#onClosing = onClosing;
      closing.addEventListener('abort', onClosing, { once: true });
      const caller = this.#caller;
      if (caller) {
        const onCaller = () => this.#abort('caller', caller.reason);
        this.#onCaller = onCaller;
        caller.addEventListener('abort', onCaller, { once: true });
      }
    }
    return controller;
  }

  /** Fires when the call must stop. Its reason is the caller's reason when the caller aborted. */
  get signal(): AbortSignal {
    if (this.#controller) return this.#controller.signal;
    return this.#caller === undefined && !this.#cancellable ? this.#closing : this.#link().signal;
  }

  /**
   * The caller's signal, for a transport that also takes the closing signal
   * (`Channel.takesClosingSignal`): the two then stop the call without a signal of its own. Undefined
   * when {@link signal} is needed instead (it was made already, or the scope can be cancelled).
   */
  get callerSignal(): AbortSignal | undefined {
    return this.#controller === undefined && !this.#cancellable ? this.#caller : undefined;
  }

  /** The connection's closing signal. */
  get closingSignal(): AbortSignal {
    return this.#closing;
  }

  /** Whether {@link signal} is the connection's closing signal, shared by calls and outliving them. */
  get signalIsShared(): boolean {
    return this.#controller === undefined && this.#caller === undefined && !this.#cancellable;
  }

  /**
   * True once the call must stop. Without a signal of its own, why is decided when first seen; if
   * both signals fired by then, the caller's abort is the one told: it concerns this call alone.
   */
  get aborted(): boolean {
    if (this.#why !== undefined) return true;
    if (this.#controller) return false;
    if (this.#caller?.aborted) this.#why = 'caller';
    else if (this.#closing.aborted) this.#why = 'closed';
    return this.#why !== undefined;
  }

  /** The deadline as the transport takes it (undefined when there is none). */
  get transportDeadline(): number | undefined {
    return Number.isFinite(this.deadline) ? this.deadline : undefined;
  }

  /** Stops the call on behalf of its owner (a stream's `cancel()`). Only for cancellable scopes. */
  cancel(): void {
    if (this.#why === undefined && this.#controller) this.#abort('cancelled', this.#cancelError());
  }

  /** The typed error for the reason the call stopped. */
  abortError(): EtcdError {
    switch (this.aborted ? this.#why : undefined) {
      case 'closed':
        return new ClientClosedError();
      case 'caller':
        return new AbortedError({ cause: this.#caller?.reason });
      default:
        return this.#cancelError();
    }
  }

  /**
   * What a cancelled stream ends with. One per scope: a stream's end cancels its scope and then
   * tells its reader why, and each error made captures a stack.
   */
  #cancelError(): AbortedError {
    this.#cancelled ??= new AbortedError({ message: 'the stream was cancelled' });
    return this.#cancelled;
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

  /** The reason the call's signal carries when it stopped for `why`. */
  #reason(why: Why): unknown {
    if (why === 'closed') return this.#closing.reason;
    if (why === 'caller') return this.#caller?.reason;
    return this.#cancelError();
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
