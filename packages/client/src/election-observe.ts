// ElectionClient.observe as a long-lived follower: etcd's Observe is one server stream, which breaks
// when its member stops, the connection drops or (with requireLeader) the member loses its leader.
// The follower reopens it (the connection picks the endpoint; one that failed is in backoff, so the
// reopen goes to another member) and keeps the iteration going. Every new stream starts with the
// current leader, so what was already yielded is recognised by the leader key's (create revision,
// mod revision), which only grows: nothing is yielded twice, nothing older than what was yielded.
import { backoffDelay } from './connection/backoff.js';
import type { Rpc } from './connection/types.js';
import { AbortedError, ClientClosedError, type EtcdError, toEtcdError } from './errors.js';
import { v3electionpb_Election as methods } from './generated/methods.js';
import type { v3electionpb } from './generated/protocol.js';
import { type KeyValue, toKeyValue } from './key-value.js';
import { linkSignals } from './link-signals.js';
import { GrpcStatus } from './transport/types.js';
import { sleep } from './watch/sleep.js';

/**
 * Pause before reopening a broken Observe stream: 50-100 ms after a stream that had answered,
 * doubling (jittered) while reopening fails, up to 5 s.
 */
export const OBSERVE_REOPEN_BACKOFF = { baseMs: 100, maxMs: 5_000 } as const;

/**
 * Codes that a new stream would meet again: the caller's own input, a method the server lacks,
 * credentials refused (the connection has already refreshed an expired token once), the client
 * closed, the caller aborted.
 */
const FATAL_CODES = new Set<string>([
  'CLIENT_CLOSED',
  'ABORTED',
  'INVALID_ARGUMENT',
  'UNIMPLEMENTED',
  'AUTH_FAILED',
  'AUTH_OLD_REVISION',
  'INVALID_AUTH_TOKEN',
  'PERMISSION_DENIED',
  'USER_EMPTY',
]);

/** gRPC statuses of the same kind, for errors known only by their status (request too large...). */
const FATAL_STATUSES = new Set<GrpcStatus>([
  GrpcStatus.InvalidArgument,
  GrpcStatus.Unimplemented,
  GrpcStatus.PermissionDenied,
  GrpcStatus.Unauthenticated,
]);

/** True when reopening the stream after `error` cannot help. */
export function isFatalObserveError(error: EtcdError): boolean {
  return FATAL_CODES.has(error.code) || FATAL_STATUSES.has(error.grpcStatus);
}

/** Wakes the followers of each connection that wait to reopen, so `close()` ends them at once. */
const waiting = new WeakMap<Rpc, Set<AbortController>>();

/** Ends every observation of `rpc` with ClientClosedError (the client is closing). */
export function closeElectionObservers(rpc: Rpc): void {
  const controllers = waiting.get(rpc);
  if (!controllers) return;
  for (const controller of controllers) controller.abort();
  controllers.clear();
}

/** True when `kv` comes after `last` in the election's history: a later leader or a later value. */
function isLater(kv: KeyValue, last: KeyValue): boolean {
  if (kv.createRevision !== last.createRevision) return kv.createRevision > last.createRevision;
  return kv.modRevision > last.modRevision;
}

function toLeaderValue(response: v3electionpb.LeaderResponse): KeyValue | undefined {
  return response.kv ? toKeyValue(response.kv, (key) => key) : undefined;
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
 * Observe streams one after the other, each opened when the previous one broke, as one iteration:
 * see {@link ElectionClient.observe}.
 */
export async function* observeResuming(
  rpc: Rpc,
  request: v3electionpb.LeaderRequest.$Properties,
  signal: AbortSignal | undefined,
): AsyncGenerator<KeyValue, void, undefined> {
  const closing = new AbortController();
  let controllers = waiting.get(rpc);
  if (!controllers) {
    controllers = new Set();
    waiting.set(rpc, controllers);
  }
  controllers.add(closing);
  let last: KeyValue | undefined;
  let failures = 0;
  try {
    for (;;) {
      const stream = rpc
        .serverStream(methods.Observe, request, 'read', { signal })
        [Symbol.asyncIterator]();
      let answered = false;
      let failure: EtcdError | undefined;
      try {
        for (;;) {
          let result: IteratorResult<v3electionpb.LeaderResponse>;
          try {
            result = await stream.next();
          } catch (error) {
            failure = toEtcdError(error);
            break;
          }
          if (result.done) break;
          answered = true;
          const kv = toLeaderValue(result.value);
          // A new stream starts over with the current leader: skip what was already yielded.
          if (kv === undefined || (last !== undefined && !isLater(kv, last))) continue;
          last = kv;
          yield kv;
        }
      } finally {
        await stream.return?.();
      }
      if (signal?.aborted) {
        throw failure?.code === 'ABORTED' ? failure : new AbortedError({ cause: signal.reason });
      }
      if (failure !== undefined && isFatalObserveError(failure)) throw failure;
      if (rpc.closed || closing.signal.aborted) throw new ClientClosedError();
      // A stream that answered resets the backoff: its endpoint served, the next one may too.
      failures = answered ? 1 : failures + 1;
      // Linked only for the pause, and let go of after it: the caller's signal may outlive many
      // observations.
      const wake = signal ? linkSignals(signal, closing.signal) : undefined;
      try {
        await sleep(backoffDelay(failures, OBSERVE_REOPEN_BACKOFF), wake?.signal ?? closing.signal);
      } finally {
        wake?.release();
      }
      if (signal?.aborted) throw new AbortedError({ cause: signal.reason });
      if (rpc.closed || closing.signal.aborted) throw new ClientClosedError();
    }
  } finally {
    controllers.delete(closing);
  }
}
