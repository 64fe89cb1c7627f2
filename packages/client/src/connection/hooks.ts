// Hooks are for observing: one that throws must not break the call, stream, keepalive or sync that
// reports to it.

/** Calls `hook` with `event` when it is set, ignoring what it throws. */
export function callHook<E>(hook: ((event: E) => void) | undefined, event: E): void {
  if (!hook) return;
  try {
    hook(event);
  } catch {
    // Ignored, as documented: hooks never break what reports to them.
  }
}
