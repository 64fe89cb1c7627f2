// The two stream shapes of the connection (a server stream, a bidi stream): opened on a ready
// endpoint under the retry policy, holding that endpoint until they end. Unary calls stay in
// connection.ts, whose state these share through a StreamHost.
import { ClientClosedError, toEtcdError } from '../errors.js';
import type { MethodDescriptor } from '../generated/methods.js';
import type { BidiStream, Metadata, ServerStream } from '../transport/types.js';
import { streamFailed } from './call-failures.js';
import { CallScope } from './call-scope.js';
import {
  type AttemptFailure,
  type CallState,
  newState,
  type PickedEndpoint,
} from './call-state.js';
import type { EndpointPool, PooledEndpoint } from './endpoint-pool.js';
import type { ResolvedOptions } from './options.js';
import type { OrderingGuard } from './ordering.js';
import { retrying } from './retry-loop.js';
import type { CallOptions, RetryPolicy } from './types.js';

const DONE: IteratorReturnResult<undefined> = { done: true, value: undefined };

/** What a stream needs of its connection. */
export interface StreamHost {
  readonly options: ResolvedOptions;
  readonly pool: EndpointPool;
  /** Aborted by the connection's close(). */
  readonly closing: AbortSignal;
  readonly ordering: OrderingGuard | undefined;
  /** Keeps close() waiting until `promise` settles. */
  track<T>(promise: Promise<T>): Promise<T>;
  /** The token for the next attempt, or undefined without auth. */
  token(scope: CallScope, state: CallState): Promise<string | undefined>;
  /** Picks an endpoint and waits until its channel is connected. */
  connect(scope: CallScope, state: CallState): Promise<PickedEndpoint>;
  /** Turns a failed attempt into an AttemptFailure under the retry policy. */
  failure(
    error: unknown,
    policy: RetryPolicy,
    scope: CallScope,
    state: CallState,
    endpoint: PooledEndpoint,
    token: string | undefined,
  ): AttemptFailure;
  metadata(token: string | undefined): Metadata;
}

/** Connection.serverStream: see its doc comment. */
export function openServerStream<Req, Res>(
  host: StreamHost,
  method: MethodDescriptor<Req, Res, 'server-stream'>,
  request: Req,
  retry: RetryPolicy,
  options: CallOptions | undefined,
): ServerStream<Res> {
  const scope = new CallScope(
    options?.signal,
    host.closing,
    options?.timeoutMs ?? Number.POSITIVE_INFINITY,
    true,
  );
  let inner: AsyncIterator<Res> | undefined;
  /** The endpoint the open stream uses, until it is released. */
  let held: PooledEndpoint | undefined;
  /** `host:port` of the endpoint the stream is opening or open on; kept after it ends. */
  let openedOn: string | undefined;
  let started = false;
  let opening: Promise<IteratorResult<Res>> | undefined;
  let finished = false;
  const release = () => {
    if (held) host.pool.release(held);
    held = undefined;
  };
  // However the stream stops (cancel(), the caller's signal, close(), the end of the iteration),
  // its endpoint is released at once, even if nobody reads the stream any more.
  scope.signal.addEventListener('abort', release, { once: true });
  const finish = () => {
    if (finished) return;
    finished = true;
    // Stops an open still in flight, and the call below if it is still running.
    scope.cancel();
    scope.dispose();
    void inner?.return?.();
    release();
  };
  const open = async (): Promise<IteratorResult<Res>> => {
    if (scope.aborted) throw scope.abortError();
    const state = newState();
    return retrying(host.options, method.path, scope, state, async () => {
      const token = await host.token(scope, state);
      const { endpoint, channel } = await host.connect(scope, state);
      let iterator: AsyncIterator<Res> | undefined;
      try {
        // Inside the try: a transport that throws at once must not keep the endpoint held.
        const stream = channel.serverStream(method, request, {
          metadata: host.metadata(token),
          deadline: scope.transportDeadline,
          signal: scope.signal,
        });
        openedOn = endpoint.target;
        iterator = stream[Symbol.asyncIterator]();
        const first = await iterator.next();
        host.pool.succeeded(endpoint);
        if (host.ordering && !first.done) host.ordering.observe(first.value);
        inner = iterator;
        held = endpoint;
        if (finished || scope.aborted) release();
        return first;
      } catch (error) {
        // The next attempt may open it elsewhere; until then no endpoint holds it.
        openedOn = undefined;
        void iterator?.return?.();
        host.pool.release(endpoint);
        throw host.failure(error, retry, scope, state, endpoint, token);
      }
    });
  };
  const next = async (): Promise<IteratorResult<Res>> => {
    if (finished) return DONE;
    try {
      let result: IteratorResult<Res>;
      if (!started) {
        started = true;
        opening = host.track(open());
        result = await opening;
      } else {
        // A next() issued while the stream is still opening waits for it.
        if (!inner) await opening?.catch(() => undefined);
        if (!inner || finished) return DONE;
        result = await inner.next();
        if (host.ordering && !result.done) host.ordering.observe(result.value);
      }
      if (result.done) finish();
      return result;
    } catch (error) {
      // Failures while opening were judged by the retry loop; this one ended an open stream.
      if (inner && held && !scope.aborted) streamFailed(host.pool, error, held);
      const typed = scope.aborted ? scope.abortError() : toEtcdError(error);
      finish();
      throw typed;
    }
  };
  const iterator: AsyncIterator<Res> = {
    next,
    return: async () => {
      finish();
      return DONE;
    },
  };
  return {
    get endpoint() {
      return openedOn;
    },
    cancel: () => {
      scope.cancel();
      if (!started) finish();
    },
    [Symbol.asyncIterator]: () => iterator,
  };
}

/** Connection.bidiStream (before its tracking): see its doc comment. */
export async function openBidiStream<Req, Res>(
  host: StreamHost,
  method: MethodDescriptor<Req, Res, 'bidi-stream'>,
  options: CallOptions | undefined,
): Promise<BidiStream<Req, Res>> {
  if (host.closing.aborted) throw new ClientClosedError();
  const scope = new CallScope(
    options?.signal,
    host.closing,
    options?.timeoutMs ?? Number.POSITIVE_INFINITY,
    true,
  );
  /** Set by the attempt that opened the stream; it holds `endpoint` until released. */
  let opened:
    | { stream: BidiStream<Req, Res>; inner: AsyncIterator<Res>; endpoint: PooledEndpoint }
    | undefined;
  const state = newState();
  try {
    await retrying(host.options, method.path, scope, state, async () => {
      const token = await host.token(scope, state);
      const { endpoint, channel } = await host.connect(scope, state);
      let stream: BidiStream<Req, Res> | undefined;
      try {
        stream = channel.bidiStream(method, {
          metadata: host.metadata(token),
          deadline: scope.transportDeadline,
          signal: scope.signal,
        });
        opened = { stream, inner: stream[Symbol.asyncIterator](), endpoint };
      } catch (error) {
        stream?.cancel();
        host.pool.release(endpoint);
        throw error;
      }
    });
  } catch (error) {
    // The retry loop may give up (an abort) after the attempt opened the stream.
    if (opened) {
      opened.stream.cancel();
      host.pool.release(opened.endpoint);
    }
    scope.dispose();
    throw error;
  }
  const { stream, inner, endpoint } = opened!;
  let released = false;
  const release = () => {
    if (released) return;
    released = true;
    host.pool.release(endpoint);
  };
  // A stream cancelled (cancel(), the caller's signal, close()) lets go of its endpoint at once,
  // even if nobody reads it: a dropped endpoint's channel then closes without waiting for a read.
  if (scope.aborted) release();
  else scope.signal.addEventListener('abort', release, { once: true });
  let answered = false;
  let finished = false;
  const finish = () => {
    if (finished) return;
    finished = true;
    scope.cancel();
    scope.dispose();
    void inner.return?.();
    release();
  };
  const iterator: AsyncIterator<Res> = {
    next: async () => {
      if (finished) return DONE;
      try {
        const result = await inner.next();
        if (host.ordering && !result.done) host.ordering.observe(result.value);
        if (result.done) {
          finish();
        } else if (!answered) {
          // The endpoint served this stream: its backoff ends, as after a unary answer.
          answered = true;
          host.pool.succeeded(endpoint);
        }
        return result;
      } catch (error) {
        if (!scope.aborted) streamFailed(host.pool, error, endpoint);
        const typed = scope.aborted ? scope.abortError() : toEtcdError(error);
        finish();
        throw typed;
      }
    },
    return: async () => {
      finish();
      return DONE;
    },
  };
  return {
    endpoint: endpoint.target,
    write: (request: Req) => {
      if (scope.aborted) throw scope.abortError();
      try {
        stream.write(request);
      } catch (error) {
        throw toEtcdError(error);
      }
    },
    end: () => stream.end(),
    cancel: () => scope.cancel(),
    [Symbol.asyncIterator]: () => iterator,
  };
}
