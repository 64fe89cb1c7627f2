// Stream events for tests that drive an H2Connection by hand: every event ignored unless given.
import type { H2StreamEvents } from '../../src/transport/h2-connection.js';

/** Events that do nothing, with `overrides` in their place. */
export function streamEvents(overrides: Partial<H2StreamEvents> = {}): H2StreamEvents {
  return {
    onHeaders: () => {},
    onData: () => {},
    onEnd: () => {},
    onReset: () => {},
    onDropped: () => {},
    onRefused: () => {},
    ...overrides,
  };
}
