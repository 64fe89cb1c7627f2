// Turns a Node object-mode Readable (as grpc-js streams are) into an async iterator with bounded
// buffering: the source is paused while `highWaterMark` messages wait for the consumer, so a slow
// consumer slows the server down (HTTP/2 flow control) instead of growing memory without bound.
import type { Readable } from 'node:stream';

/** The smallest surface of a Readable the reader needs. */
type Source = Pick<Readable, 'on' | 'off' | 'pause' | 'resume'>;

/**
 * Iterates `source`. An `error` event is reported only after every message received before it has
 * been delivered, then iteration throws `mapError(error)` once and is done. `onDone` runs exactly
 * once when iteration ends for any reason (end, error, `return()` from `break`).
 */
export function readableToAsyncIterator<T>(
  source: Source,
  mapError: (error: unknown) => Error,
  onDone: () => void,
  highWaterMark = 16,
): AsyncIterator<T> {
  const queue: T[] = [];
  let ended = false;
  let failure: Error | undefined;
  let finished = false;
  let paused = false;
  let wake: (() => void) | undefined;

  const notify = () => {
    const w = wake;
    wake = undefined;
    w?.();
  };
  const onData = (message: T) => {
    queue.push(message);
    if (queue.length >= highWaterMark && !paused && !ended) {
      paused = true;
      source.pause();
    }
    notify();
  };
  const onError = (error: unknown) => {
    if (failure === undefined) failure = mapError(error);
    // Let whatever is still buffered flow out, so it is delivered before the error.
    paused = false;
    source.resume();
    notify();
  };
  const onEnd = () => {
    ended = true;
    notify();
  };
  source.on('data', onData);
  source.on('error', onError);
  source.on('end', onEnd);
  source.on('close', onEnd);

  const finish = () => {
    if (finished) return;
    finished = true;
    queue.length = 0;
    source.off('data', onData);
    source.off('end', onEnd);
    source.off('close', onEnd);
    // Keep an error listener: an unhandled 'error' event would crash the process.
    source.off('error', onError);
    source.on('error', () => {});
    onDone();
  };

  return {
    async next(): Promise<IteratorResult<T>> {
      while (!finished) {
        const value = queue.shift();
        if (value !== undefined) {
          if (paused && queue.length <= highWaterMark / 2) {
            paused = false;
            source.resume();
          }
          return { done: false, value };
        }
        if (ended) {
          const error = failure;
          finish();
          if (error) throw error;
          break;
        }
        await new Promise<void>((resolve) => {
          wake = resolve;
        });
      }
      return { done: true, value: undefined };
    },
    async return(): Promise<IteratorResult<T>> {
      finish();
      return { done: true, value: undefined };
    },
  };
}
