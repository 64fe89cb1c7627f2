// The server-side Election service (`etcd.election`): the server runs the election, one call per
// step; Go's key layout, so it shares elections with recipes' Election, Go and `etcdctl elect`.

import type { Bytes } from '../bytes.js';
import { plainBytes } from '../bytes.js';
import type { CallOptions, Rpc } from '../connection/types.js';
import { v3electionpb_Election as methods } from '../generated/methods.js';
import type { v3electionpb } from '../generated/protocol.js';
import {
  type Acknowledged,
  acknowledged,
  type ResponseHeader,
  toResponseHeader,
} from '../header.js';
import { jsonReady } from '../json.js';
import { type KeyValue, toKeyValue } from '../key-value.js';
import { bytesArg, flagArg, type LeaseRef, leaseArg, objectArg, revisionArg } from '../validate.js';
import { ElectionObservers, observeOnce, observeResuming } from './election-observe.js';
import type { ElectionHooks } from './election-observe-events.js';
import { type ObserveCallOptions, observeSettings } from './election-observe-options.js';
import { withServiceAnswers } from './service-answers.js';

/**
 * Who leads an election, as {@link ElectionClient.campaign} reports it. Keep it to proclaim and
 * resign; it holds nothing but these four fields, so it can be stored and passed around.
 */
export interface LeaderKey {
  /** The election's name. */
  readonly name: Uint8Array;
  /** The leader's key, `name/<lease id in lowercase hex>`; it exists while the leadership lasts. */
  readonly key: Uint8Array;
  /**
   * The key's create revision: the leadership's epoch. It grows with every new leader, so it
   * serves as a fencing token.
   */
  readonly rev: bigint;
  /** The lease the key is attached to; the leadership ends when it expires or is revoked. */
  readonly lease: bigint;
}

/** The answer of {@link ElectionClient.campaign}: the leader key, and the campaign's header. */
export interface CampaignResult extends LeaderKey {
  /**
   * The header of the campaign's first write (when the candidate queued), not of the moment it was
   * elected, as etcd reports it.
   */
  readonly header: ResponseHeader;
}

/** Options of {@link ElectionClient.campaign}. */
export interface CampaignCallOptions extends CallOptions {
  /**
   * The lease the candidate's key is attached to: the leadership ends when the lease expires or is
   * revoked, so keep it alive (`lease.keepAlive()`). One lease is one candidate per election:
   * campaigning again with it keeps its key and place, and proclaims the new value.
   *
   * Without it the server grants a fresh lease of 60 s that nothing keeps alive, so the leadership
   * ends a minute later at the latest.
   */
  readonly lease?: LeaseRef;
  /**
   * Deadline in ms. Default: none, unlike other calls, since a leader may stay for a long time;
   * pass `signal` to give up.
   */
  readonly timeoutMs?: number;
}

/** Options of an {@link ElectionClient}. */
export interface ElectionClientOptions {
  /** Observe stream losses and resumptions; the `Etcd` facade passes the client's `hooks`. */
  readonly hooks?: ElectionHooks;
}

/**
 * The Election service of the server (etcd's v3election): candidates queue under the election's
 * name, the oldest one leads, and the others wait their turn (in the order they queued).
 *
 * This is the server-side election, one call per step. The client-side `Election` of
 * `@etcdkit/recipes` runs the same algorithm from the client and adds a session that keeps the
 * lease alive and a signal when leadership may be lost. Both use the same keys and take part in
 * the same elections (with Go services and `etcdctl elect` too).
 *
 * @example
 * ```ts
 * const lease = await etcd.lease.grant(10, { keepAlive: true });
 * const leader = await etcd.election.campaign('elections/scheduler', 'node-1', { lease });
 * await etcd.election.proclaim(leader, 'node-1 (draining)');
 * await etcd.election.resign(leader);
 * ```
 */
export class ElectionClient {
  readonly #hooks: ElectionHooks | undefined;
  /** The connection calls go through. */
  readonly #rpc: Rpc;
  /** @internal Its resuming observations, ended by the close of the client that owns them. */
  readonly observers: ElectionObservers;

  /** The Election service over a connection (or any {@link Rpc}); most programs use `etcd.election`. */
  constructor(rpc: Rpc, options?: ElectionClientOptions);
  /** @internal With the observations of the client that owns it (etcd.ts closes them). */
  constructor(rpc: Rpc, options: ElectionClientOptions, observers: ElectionObservers);
  constructor(rpc: Rpc, options: ElectionClientOptions = {}, observers = new ElectionObservers()) {
    this.#rpc = rpc;
    this.#hooks = objectArg(options, 'options').hooks;
    this.observers = observers;
  }

  /**
   * Puts `value` up for election `name` and resolves once elected: when every candidate that
   * queued earlier has resigned or lost its lease. Election names are keys of the whole store
   * (namespaces do not apply).
   *
   * Fails with LeaseNotFoundError for an unknown lease. A candidate whose key vanished while it
   * waited (lease revoked or expired, key deleted) is still reported elected on its turn, with a
   * key that no longer exists: etcd 3.4 to 3.6 and the embedded server answer so (etcd issue
   * 11051), so check the key (or the lease) before acting as leader. When `signal` aborts while it
   * waits, it fails with OutcomeUnknownError (cause: AbortedError): the server then withdraws the
   * candidate's key, but an abort that crosses the server's answer leaves it leading. An abort
   * before the call was sent is AbortedError.
   *
   * Not retried once sent: a campaign cut off fails with OutcomeUnknownError, and the candidate's
   * key may exist, waiting or leading. Campaigning again with the same lease is safe: it finds
   * the same key and place. Otherwise withdraw it by revoking the lease.
   */
  async campaign(
    name: Bytes,
    value: Bytes,
    options: CampaignCallOptions = {},
  ): Promise<CampaignResult> {
    const o = objectArg(options, 'options');
    const request = {
      name: bytesArg(name, 'name'),
      value: bytesArg(value, 'value'),
      lease: leaseArg(o.lease, 'lease'),
    };
    const response = await withServiceAnswers(
      this.#rpc.unary(methods.Campaign, request, 'write', {
        signal: options.signal,
        timeoutMs: options.timeoutMs ?? Number.POSITIVE_INFINITY,
      }),
    );
    return jsonReady({
      ...toLeaderKey(response.leader),
      header: toResponseHeader(response.header),
    });
  }

  /**
   * Announces a new value as the leader, without a new election. Fails with
   * ElectionNotLeaderError (and writes nothing) when `leader` no longer leads: its key was deleted
   * or re-created since. Not retried once sent (a repeated proclaim writes the value twice).
   */
  async proclaim(
    leader: LeaderKey,
    value: Bytes,
    options: CallOptions = {},
  ): Promise<Acknowledged> {
    const request = { leader: fromLeaderKey(leader), value: bytesArg(value, 'value') };
    return acknowledged(
      await withServiceAnswers(this.#rpc.unary(methods.Proclaim, request, 'write', options)),
    );
  }

  /**
   * Gives up the leadership (or the place in the queue): deletes the key if it is still the one
   * `leader` was elected with. Resigning when no longer leading is not an error, so the call is
   * retried like a read.
   */
  async resign(leader: LeaderKey, options: CallOptions = {}): Promise<Acknowledged> {
    const request = { leader: fromLeaderKey(leader) };
    return acknowledged(
      await withServiceAnswers(this.#rpc.unary(methods.Resign, request, 'guarded-write', options)),
    );
  }

  /**
   * The current leader's key and value (its create revision is the leadership's epoch). Fails
   * with ElectionNoLeaderError when no candidate stands.
   */
  async leader(name: Bytes, options: CallOptions = {}): Promise<KeyValue> {
    const request = { name: bytesArg(name, 'name') };
    const response = await this.#rpc.unary(methods.Leader, request, 'read', options);
    return toKeyValue(response.kv ?? {}, (key) => key);
  }

  /**
   * The leaders of election `name` and the values they proclaim, as they change: first the current
   * leader (or, when there is none, the first candidate), then every value its key takes, then the
   * next leader when its key is deleted, and so on. Leaders come in the order they were elected
   * and a deleted leader is not reported after its delete; a leader that comes and goes while the
   * next one is looked up can be skipped (the server reads the current leader then).
   *
   * The observation outlives its stream: when the stream breaks (a member stopped or lost its
   * leader, the connection dropped) or the server ends it, Observe is opened again, after a short
   * backoff (`minReconnectDelayMs`, default 100 ms, doubling while opening fails, up to
   * `maxReconnectDelayMs`, default 5 s) and on another member when the connection put the failed
   * one in backoff. The loss is reported to `onDisconnected` and the client's
   * `onObserveDisconnect` hook, the return to `onResumed` and `onObserveResume`, once per outage. The new stream starts with the current leader; a
   * value is yielded only when it is later than the last one yielded (a later leader, by the
   * create revision of its key, or a later value of the same leader, by its mod revision), so
   * nothing is yielded twice and nothing goes back. What happened while no stream was open comes
   * as the state it left: the current leader and its latest value once the stream is back; the
   * leaders and values in between are not reported (Observe promises the latest value, not every
   * one; watch the election's keys for every change).
   *
   * The iteration ends when `signal` aborts (AbortedError), the loop is left, or the client closes
   * (ClientClosedError). It fails with errors that a new stream would meet again: invalid
   * arguments, an unimplemented service, refused credentials or permissions. Pass `resume: false`
   * for a single stream that ends with its first failure.
   *
   * A member cut off from its cluster keeps an Observe stream open and silent: pass
   * `requireLeader: true` to the client (the member then ends the stream with "no leader" and the
   * observation moves on), or `leaderCheckIntervalMs` to notice any silent stream that missed a
   * change.
   *
   * Invalid options throw InvalidArgumentError at once.
   */
  observe(name: Bytes, options: ObserveCallOptions = {}): AsyncIterable<KeyValue> {
    const request = { name: bytesArg(name, 'name') };
    const o = objectArg(options, 'options');
    const { signal } = o;
    const resume = o.resume === undefined || flagArg(o.resume, 'options.resume');
    const settings = observeSettings(o, resume, this.#hooks);
    const rpc = this.#rpc;
    const { observers } = this;
    return {
      // Each iteration opens its own streams, and only when it starts.
      [Symbol.asyncIterator]: () =>
        resume
          ? observeResuming(rpc, observers, request, signal, settings)
          : observeOnce(rpc, request, signal),
    };
  }
}

function toLeaderKey(leader: v3electionpb.LeaderKey.$Properties | null | undefined): LeaderKey {
  return jsonReady({
    name: plainBytes(leader?.name),
    key: plainBytes(leader?.key),
    rev: leader?.rev ?? 0n,
    lease: leader?.lease ?? 0n,
  });
}

function fromLeaderKey(leader: LeaderKey): v3electionpb.LeaderKey.$Properties {
  const o = objectArg(leader, 'leader');
  return {
    name: bytesArg(o.name, 'leader.name'),
    key: bytesArg(o.key, 'leader.key'),
    rev: revisionArg(o.rev, 'leader.rev'),
    lease: leaseArg(o.lease, 'leader.lease'),
  };
}
