// Turns a Node object-mode Readable (as grpc-js streams are) into an async iterator with bounded
// buffering (a ResponseQueue): the source is paused while `highWaterMark` messages wait for the
// consumer, so a slow consumer slows the server down (HTTP/2 flow control) instead of growing
// memory without bound.
import type { Readable } from 'node:stream';
import { ResponseQueue } from './response-queue.js';

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
  const onData = (message: T) => queue.push(message);
  const onError = (error: unknown) => queue.fail(mapError(error));
  const onEnd = () => queue.end();
  const queue = new ResponseQueue<T>(
    source,
    () => {
      source.off('data', onData);
      source.off('end', onEnd);
      source.off('close', onEnd);
      // Keep an error listener: an unhandled 'error' event would crash the process.
      source.off('error', onError);
      source.on('error', () => {});
      onDone();
    },
    highWaterMark,
  );
  source.on('data', onData);
  source.on('error', onError);
  source.on('end', onEnd);
  source.on('close', onEnd);
  return queue;
}
