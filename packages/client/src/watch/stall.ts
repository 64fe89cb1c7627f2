// Liveness of one watch stream: a silent stream is probed with a progress request, and one whose
// request got no response within the stall timeout is dead (a half-open connection sends no error).

/** What the detector needs from its stream. */
export interface StallTarget {
  /** True while a watch creation is unanswered. */
  awaitingReply(): boolean;
  /** True when a progress request would be answered (the stream has created watchers). */
  canProbe(): boolean;
  /** Sends a progress request. */
  probe(): void;
  /** The stream is dead: no answer for `waitedMs`. Called once. */
  stalled(waitedMs: number): void;
}

/** Timing of the detector, in ms. */
export interface StallTiming {
  readonly progressIntervalMs: number;
  readonly stallTimeoutMs: number;
}

/** Watches one stream's silence with a single timer, re-armed lazily. */
export class StallDetector {
  #lastHeard: number;
  /** When the first request after the last response was sent; undefined when none was. */
  #askedSince: number | undefined;
  #probing = false;
  #timer: NodeJS.Timeout | undefined;
  #dueAt = Number.POSITIVE_INFINITY;
  #stopped = false;

  readonly #timing: StallTiming;
  readonly #target: StallTarget;
  readonly #now: () => number;

  constructor(timing: StallTiming, target: StallTarget, now: () => number = Date.now) {
    this.#timing = timing;
    this.#target = target;
    this.#now = now;
    this.#lastHeard = now();
    this.#arm(timing.progressIntervalMs);
  }

  /** A response arrived. Cheap: it only records the time. */
  heard(): void {
    this.#lastHeard = this.#now();
    this.#askedSince = undefined;
    this.#probing = false;
  }

  /** A request that the server must answer was sent. */
  asked(): void {
    if (this.#stopped) return;
    const now = this.#now();
    this.#askedSince ??= now;
    // The timer may be set for the end of a long idle interval: bring it forward.
    if (this.#dueAt > now + this.#timing.stallTimeoutMs) this.#arm(this.#timing.stallTimeoutMs);
  }

  /** Stops the timer for good. */
  stop(): void {
    this.#stopped = true;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #arm(delayMs: number): void {
    if (this.#stopped) return;
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    const delay = Math.max(1, Math.ceil(delayMs));
    this.#dueAt = this.#now() + delay;
    this.#timer = setTimeout(() => this.#check(), delay);
    // The stream itself keeps the process alive while it is open; the timer must not.
    this.#timer.unref();
  }

  #check(): void {
    this.#timer = undefined;
    if (this.#stopped) return;
    const now = this.#now();
    const { progressIntervalMs, stallTimeoutMs } = this.#timing;
    if (this.#probing || this.#target.awaitingReply()) {
      const since = Math.max(this.#lastHeard, this.#askedSince ?? this.#lastHeard);
      const waited = now - since;
      if (waited >= stallTimeoutMs) {
        this.stop();
        this.#target.stalled(waited);
        return;
      }
      this.#arm(stallTimeoutMs - waited);
      return;
    }
    const silent = now - this.#lastHeard;
    if (silent < progressIntervalMs) {
      this.#arm(progressIntervalMs - silent);
      return;
    }
    if (!this.#target.canProbe()) {
      this.#arm(progressIntervalMs);
      return;
    }
    this.#probing = true;
    this.#askedSince = now;
    this.#target.probe();
    this.#arm(stallTimeoutMs);
  }
}
