// The calls that stop when an AbortSignal fires. Most calls of a channel share one signal (the
// connection's closing signal), so each signal gets one listener, however many calls wait on it:
// adding and removing a listener per call costs more than the rest of the abort wiring.
import { abortedFailure } from './failures.js';
import type { TransportError } from './types.js';

/**
 * What the watch uses of a call. http2-call.ts's ChannelCall has it; naming ChannelCall here would
 * make the two files import each other.
 */
export interface AbortableCall {
  /** Whether the request may have reached the server: the abort failure carries it. */
  readonly sent: boolean;
  abort(error: TransportError): void;
}

interface Watched {
  readonly calls: Set<AbortableCall>;
  readonly listener: () => void;
}

/** Aborts calls (Cancelled, with the signal's reason) when their signal fires. */
export class AbortWatch {
  readonly #bySignal = new Map<AbortSignal, Watched>();

  /** Aborts `call` when `signal` fires, until {@link delete}. `signal` must not be aborted yet. */
  add(signal: AbortSignal, call: AbortableCall): void {
    const watched = this.#bySignal.get(signal);
    if (watched) {
      watched.calls.add(call);
      return;
    }
    const calls = new Set([call]);
    const listener = () => {
      this.#bySignal.delete(signal);
      for (const c of [...calls]) c.abort(abortedFailure(signal, c.sent));
    };
    this.#bySignal.set(signal, { calls, listener });
    signal.addEventListener('abort', listener, { once: true });
  }

  /** Stops watching `call`; the signal's listener goes with its last call. */
  delete(signal: AbortSignal, call: AbortableCall): void {
    const watched = this.#bySignal.get(signal);
    if (!watched?.calls.delete(call) || watched.calls.size > 0) return;
    this.#bySignal.delete(signal);
    signal.removeEventListener('abort', watched.listener);
  }
}
