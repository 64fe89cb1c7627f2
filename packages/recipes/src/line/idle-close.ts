// Closing a session's kept watch once nothing has used it for a while: one timer per idle spell,
// re-armed for what is left when the watch was used meanwhile, not one timer per use.

/** @internal Calls `close` once `spared()` stays false for `ms` after the last {@link idle}. */
export class IdleClose {
  #since = 0;
  #timer: NodeJS.Timeout | undefined;

  /** `spared`: in use, or closed already (nothing for the timer to do). */
  constructor(
    private readonly ms: number,
    private readonly spared: () => boolean,
    private readonly close: () => void,
  ) {}

  /** The last user left: closes after `ms` unless one comes meanwhile. */
  idle(): void {
    this.#since = performance.now();
    if (this.#timer !== undefined || this.spared()) return;
    this.#arm(this.ms);
  }

  /** Closed by other means: no timer left behind. */
  cancel(): void {
    if (this.#timer !== undefined) clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #arm(ms: number): void {
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      if (this.spared()) return;
      const left = this.ms - (performance.now() - this.#since);
      if (left > 1) this.#arm(left);
      else this.close();
    }, ms);
    this.#timer.unref();
  }
}
