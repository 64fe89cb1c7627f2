// ElectionClient.observe as a long-lived follower: it reopens the Observe stream when it breaks and
// yields only what is later (leader key's create and mod revision) than what it yielded.
import { callHook } from '../connection/hooks.js';
import { linkSignals } from '../connection/link-signals.js';
import { ResumableStream } from '../connection/resumable-stream.js';
import { streamFailure } from '../connection/retry.js';
import type { Rpc } from '../connection/types.js';
import {
  AbortedError,
  ClientClosedError,
  type EtcdError,
  toEtcdError,
  UnavailableError,
} from '../errors.js';
import { v3electionpb_Election as methods } from '../generated/methods.js';
import type { v3electionpb } from '../generated/protocol.js';
import type { KeyValue } from '../key-value.js';
import type { ServerStream } from '../transport/types.js';
import {
  ObserveLivenessCheck,
  type ObserveRuntime,
  SYSTEM_RUNTIME,
  toLeaderValue,
} from './election-observe-check.js';
import type { ObserveResumed } from './election-observe-events.js';
import { DEFAULT_OBSERVE_SETTINGS, type ObserveSettings } from './election-observe-options.js';

/**
 * The resuming observations of one client, owned by it (etcd.ts): `close()` wakes those that wait
 * to reopen, so the client's close ends them at once.
 */
export class ElectionObservers {
  readonly #closing = new Set<AbortController>();

  /** Observations resuming now (for leak tests). */
  get running(): number {
    return this.#closing.size;
  }

  /** Ends every observation with ClientClosedError (the client is closing). */
  close(): void {
    for (const controller of this.#closing) controller.abort();
    this.#closing.clear();
  }

  /** Registers an observation: its controller aborts when the client closes. */
  add(closing: AbortController): void {
    this.#closing.add(closing);
  }

  delete(closing: AbortController): void {
    this.#closing.delete(closing);
  }
}

/** True when `kv` comes after `last` in the election's history: a later leader or a later value. */
function isLater(kv: KeyValue, last: KeyValue): boolean {
  if (kv.createRevision !== last.createRevision) return kv.createRevision > last.createRevision;
  return kv.modRevision > last.modRevision;
}

/** Where the connection sends calls now, when it tells (a Connection does). */
function currentEndpointOf(rpc: Rpc): string | undefined {
  const endpoint = (rpc as { readonly currentEndpoint?: unknown }).currentEndpoint;
  return typeof endpoint === 'string' ? endpoint : undefined;
}

/**
 * The endpoint `stream` is on: its own `endpoint` (a Connection's streams tell it, and it stays
 * right when other calls move the connection). For an Rpc whose streams do not tell, where its
 * calls go now, which is where a stream opens.
 */
function streamEndpoint(stream: ServerStream<unknown> | undefined, rpc: Rpc): string | undefined {
  return stream?.endpoint ?? currentEndpointOf(rpc);
}

/** One Observe stream, as etcd sends it: ends with the stream, fails with its typed error. */
export async function* observeOnce(
  rpc: Rpc,
  request: v3electionpb.LeaderRequest.$Properties,
  signal: AbortSignal | undefined,
): AsyncGenerator<KeyValue, void, undefined> {
  for await (const response of rpc.serverStream(methods.Observe, request, 'read', { signal })) {
    const kv = toLeaderValue(response);
    if (kv) yield kv;
  }
}

/**
 * Calls a callback of the caller's like a listener of a watcher's event: one that throws is the
 * caller's bug, reported as an uncaught exception (as Node reports one on any stream), without
 * breaking the observation.
 */
function callListener<E>(listener: ((event: E) => void) | undefined, event: E): void {
  if (!listener) return;
  try {
    listener(event);
  } catch (error) {
    queueMicrotask(() => {
      throw error;
    });
  }
}

/**
 * Observe streams one after the other, each opened when the previous one broke, as one iteration:
 * see {@link ElectionClient.observe}.
 */
export async function* observeResuming(
  rpc: Rpc,
  observers: ElectionObservers,
  request: v3electionpb.LeaderRequest.$Properties,
  signal: AbortSignal | undefined,
  settings: ObserveSettings = DEFAULT_OBSERVE_SETTINGS,
  runtime: ObserveRuntime = SYSTEM_RUNTIME,
): AsyncGenerator<KeyValue, void, undefined> {
  const closing = new AbortController();
  observers.add(closing);
  const name = request.name ?? new Uint8Array();
  let last: KeyValue | undefined;
  /** The stream open now, and where it is, once it answered. */
  let call: ServerStream<v3electionpb.LeaderResponse> | undefined;
  let endpoint: string | undefined;
  /** Set when the liveness check replaced the stream: the failure to report. */
  let stale: EtcdError | undefined;
  const resume = new ResumableStream(rpc, {
    backoff: settings.backoff,
    // A server stream's token was refreshed by the connection while it opened.
    refreshesToken: false,
    closed: () => rpc.closed === true || closing.signal.aborted,
    onDisconnect: (error) => {
      callHook(settings.hooks?.onObserveDisconnect, { name: name.slice(), error, endpoint });
      callListener(settings.onDisconnected, error);
    },
    onResume: ({ disconnectedMs, attempts }) => {
      const resumed: ObserveResumed = { name: name.slice(), endpoint, disconnectedMs, attempts };
      callHook(settings.hooks?.onObserveResume, resumed);
      callListener(settings.onResumed, resumed);
    },
    now: () => runtime.now(),
    sleep: (ms, wake) => runtime.sleep(ms, wake),
    random: () => runtime.random(),
  });
  /**
   * Ends the open stream with `error`. `at`, the endpoint it is on, is redialled: its member may be
   * cut off or its connection half-open, so it goes into backoff and the new stream opens
   * elsewhere (as a stalled watch's does).
   */
  const replace = (error: EtcdError, at: string | undefined): void => {
    if (call === undefined || stale !== undefined) return;
    stale = error;
    if (at !== undefined) resume.redial(at);
    call.cancel();
  };
  const intervalMs = settings.leaderCheckIntervalMs;
  const check =
    intervalMs === undefined
      ? undefined
      : new ObserveLivenessCheck(
          rpc,
          request,
          intervalMs,
          {
            behind: (kv) => last === undefined || isLater(kv, last),
            stale: (kv) =>
              replace(
                new UnavailableError({
                  message: `the Observe stream did not deliver the election's value of revision ${kv.modRevision} within ${intervalMs} ms; replacing it`,
                }),
                endpoint,
              ),
            unreadable: (error) => {
              // No candidate is an answer; a refusal would refuse the stream too.
              if (error.code === 'ELECTION_NO_LEADER' || streamFailure(error) !== 'resume') return;
              // The read went where calls go: only a stream on that endpoint is judged by it,
              // one still opening too (a cut-off etcd holds the first answer as well).
              const calls = currentEndpointOf(rpc);
              const at = endpoint ?? streamEndpoint(call, rpc);
              if (at === undefined || at !== calls) return;
              replace(
                new UnavailableError({
                  message: `the election could not be read through ${at}, the Observe stream's endpoint (${error.message}); replacing the stream`,
                  cause: error,
                }),
                at,
              );
            },
          },
          runtime,
        );
  try {
    for (;;) {
      resume.opening();
      stale = undefined;
      endpoint = undefined;
      call = rpc.serverStream(methods.Observe, request, 'read', { signal });
      const stream = call[Symbol.asyncIterator]();
      check?.streamOpened();
      let answered = false;
      let failure: EtcdError | undefined;
      try {
        for (;;) {
          let result: IteratorResult<v3electionpb.LeaderResponse>;
          try {
            result = await stream.next();
          } catch (error) {
            failure = stale ?? toEtcdError(error);
            break;
          }
          if (result.done) {
            failure = stale;
            break;
          }
          if (!answered) {
            answered = true;
            endpoint = streamEndpoint(call, rpc);
            resume.answered();
          }
          const kv = toLeaderValue(result.value);
          // A new stream starts over with the current leader: skip what was already yielded.
          if (kv === undefined || (last !== undefined && !isLater(kv, last))) continue;
          last = kv;
          yield kv;
        }
      } finally {
        call = undefined;
        check?.streamClosed();
        await stream.return?.();
      }
      if (signal?.aborted) {
        throw failure?.code === 'ABORTED' ? failure : new AbortedError({ cause: signal.reason });
      }
      // Reopens that fail in a row are part of one outage, reported once.
      const stop = await resume.failed(
        failure ?? new UnavailableError({ message: 'the Observe stream ended' }),
      );
      if (stop !== undefined) throw stop;
      // Linked only for the pause, and let go of after it: the caller's signal may outlive many
      // observations.
      const wake = signal ? linkSignals(signal, closing.signal) : undefined;
      try {
        await resume.pause(wake?.signal ?? closing.signal);
      } finally {
        wake?.release();
      }
      if (signal?.aborted) throw new AbortedError({ cause: signal.reason });
      if (rpc.closed || closing.signal.aborted) throw new ClientClosedError();
    }
  } finally {
    check?.stop();
    observers.delete(closing);
  }
}
