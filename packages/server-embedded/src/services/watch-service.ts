// etcdserverpb.Watch over gRPC: one WatchStream per call. The stream lives until the client cancels
// it, the connection drops or the server stops; a client that only half-closes keeps receiving
// events, as with etcd. However it ends, every watcher of the stream leaves the store. With auth
// on, each create is checked against the user of the token the stream was opened with: a refused
// watch is created and canceled at once, with the error as its cancel reason.
import { etcdserverpb_Watch } from '@etcdkit/client/protocol';
import type { Authorizer } from '../auth/authorizer.js';
import type { CallCredentials } from '../auth/types.js';
import type { Clock } from '../clock.js';
import { EtcdServerError } from '../errors.js';
import { progressNotifyInterval, WatchStream } from '../watch/watch-stream.js';
import type { WatchableStore } from '../watch/watchable-store.js';
import { fillHeaderWithoutRevision, type ServiceContext } from './context.js';
import { type ServiceRegistry, toStatus } from './registry.js';

/** gRPC accepts this much more than max-request-bytes; fragments are cut at the sum, as in etcd. */
const GRPC_OVERHEAD_BYTES = 512 * 1024;

/** What the Watch service needs besides the shared context. */
export interface WatchServiceOptions {
  readonly watchable: WatchableStore;
  /** Drives progress notifications (a virtual clock in tests). */
  readonly clock: Clock;
  /** Progress notification interval in ms; default 10 minutes, at least 100 ms. */
  readonly progressNotifyIntervalMs?: number;
}

/** Registers Watch; returns a function that ends every open watch stream (server stop). */
export function registerWatchService(
  registry: ServiceRegistry,
  context: ServiceContext,
  options: WatchServiceOptions,
): () => void {
  const open = new Set<WatchStream>();
  const progressNotifyIntervalMs = progressNotifyInterval(options.progressNotifyIntervalMs);
  registry.bidi(etcdserverpb_Watch.Watch, (call) => {
    const stream = new WatchStream(call, {
      watchable: options.watchable,
      clock: options.clock,
      progressNotifyIntervalMs,
      fragmentLimitBytes: context.maxRequestBytes + GRPC_OVERHEAD_BYTES,
      header: (revision) => fillHeaderWithoutRevision(context, { revision: BigInt(revision) }),
      authorize: watchAuthorization(
        context.authorizer,
        context.authorizer.credentialsOf(call),
        context.traits.watchFromKeyChecksWholeRange,
      ),
      negativeStartIsNow: !context.traits.refusesNegativeWatchStart,
      progressAtOnce: context.traits.legacyWatchProgress,
    });
    open.add(stream);
    const end = (): void => {
      open.delete(stream);
      stream.close();
    };
    call.on('data', (request) => {
      try {
        stream.handle(request);
      } catch (error) {
        // A bug must end this stream with a status, not take the server down.
        end();
        call.emit('error', toStatus(error));
      }
    });
    call.on('cancelled', end);
    call.on('close', end);
    call.on('error', end);
  });
  return () => {
    for (const stream of open) stream.close();
    open.clear();
  };
}

/**
 * The cancel reasons of refused watches: etcd prints the gRPC status as grpc-go formats it
 * ("rpc error: code = ... desc = ..."); any other refusal reads as permission denied.
 */
const AUTH_CANCEL_REASONS = {
  INVALID_AUTH_TOKEN: new EtcdServerError('INVALID_AUTH_TOKEN').toGoText(),
  USER_EMPTY: new EtcdServerError('USER_EMPTY').toGoText(),
  PERMISSION_DENIED: new EtcdServerError('PERMISSION_DENIED').toGoText(),
} as const;

/**
 * The create check of a stream opened with `credentials` (identified anew at each create). Without
 * `fromKeyChecksWholeRange`, a watch from a key on is checked as the key alone, as etcd up to
 * 3.5.30 checks it (it empties range_end "\0" before the check).
 */
function watchAuthorization(
  authorizer: Authorizer,
  credentials: CallCredentials,
  fromKeyChecksWholeRange: boolean,
): (key: Uint8Array, rangeEnd: Uint8Array) => string | undefined {
  return (key, rangeEnd) => {
    const fromKey = rangeEnd.length === 1 && rangeEnd[0] === 0;
    const checkedEnd = fromKey && !fromKeyChecksWholeRange ? new Uint8Array(0) : rangeEnd;
    try {
      authorizer.identify(credentials).checkRange(key, checkedEnd);
      return undefined;
    } catch (error) {
      if (!(error instanceof EtcdServerError)) throw error;
      if (error.code === 'INVALID_AUTH_TOKEN' || error.code === 'USER_EMPTY') {
        return AUTH_CANCEL_REASONS[error.code];
      }
      return AUTH_CANCEL_REASONS.PERMISSION_DENIED;
    }
  };
}
