// The calls that stop when an AbortSignal fires. Most calls of a channel share one signal (the
// connection's closing signal), so each signal gets one listener, however many calls wait on it:
// adding and removing a listener per call costs more than the rest of the abort wiring. A signal
// its calls say outlives them (that closing signal) keeps its listener between calls, as a client
// making one call at a time would otherwise add and remove one per call; any other signal's
// listener goes with its last call, so a caller's signal is left as it was.
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

/** A signal's calls and its one listener (this object: no closure per signal). */
class Watched {
  readonly calls = new Set<AbortableCall>();
  /** Its listener stays while it has no calls. */
  kept = false;
  readonly #owner: Map<AbortSignal, Watched>;
  readonly #signal: AbortSignal;

  constructor(owner: Map<AbortSignal, Watched>, signal: AbortSignal) {
    this.#owner = owner;
    this.#signal = signal;
    signal.addEventListener('abort', this, { once: true });
  }

  /** The signal fired: every call waiting on it is aborted. */
  handleEvent(): void {
    this.#owner.delete(this.#signal);
    for (const call of [...this.calls]) call.abort(abortedFailure(this.#signal, call.sent));
  }

  remove(): void {
    this.#owner.delete(this.#signal);
    this.#signal.removeEventListener('abort', this);
  }
}

/** Aborts calls (Cancelled, with the signal's reason) when their signal fires. */
export class AbortWatch {
  readonly #bySignal = new Map<AbortSignal, Watched>();
  /** After {@link stop}: every listener goes with its signal's last call. */
  #stopped = false;

  /**
   * Aborts `call` when `signal` fires, until {@link delete}. `signal` must not be aborted yet.
   * `outlivesCall`: the signal is shared and long-lived, so its listener may stay between calls.
   */
  add(signal: AbortSignal, call: AbortableCall, outlivesCall = false): void {
    let watched = this.#bySignal.get(signal);
    if (watched === undefined) {
      watched = new Watched(this.#bySignal, signal);
      this.#bySignal.set(signal, watched);
    }
    if (outlivesCall && !this.#stopped) watched.kept = true;
    watched.calls.add(call);
  }

  /** Stops watching `call`; the signal's listener goes with its last call unless it is kept. */
  delete(signal: AbortSignal, call: AbortableCall): void {
    const watched = this.#bySignal.get(signal);
    if (!watched?.calls.delete(call) || watched.calls.size > 0 || watched.kept) return;
    watched.remove();
  }

  /** The channel closed: the kept listeners without calls go now, the others with their calls. */
  stop(): void {
    this.#stopped = true;
    for (const watched of [...this.#bySignal.values()]) {
      watched.kept = false;
      if (watched.calls.size === 0) watched.remove();
    }
  }
}
