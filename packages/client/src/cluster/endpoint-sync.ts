// Endpoint discovery: the client's endpoints taken from the cluster's member list, on demand
// (Etcd.syncEndpoints) and periodically in the background (the autoSyncIntervalMs option).

import type { Connection } from '../connection/connection.js';
import { callHook } from '../connection/hooks.js';
import { parseEndpoint } from '../connection/options.js';
import type { CallOptions } from '../connection/types.js';
import {
  type EtcdError,
  InvalidConfigError,
  NoMemberEndpointsError,
  toEtcdError,
} from '../errors.js';
import type { ClusterClient, Member } from './cluster.js';

/** What one endpoint sync found and did. */
export interface EndpointSyncResult {
  /** The endpoints calls use after the sync, normalised (`http://host:port`). */
  readonly endpoints: readonly string[];
  /** The endpoints before the sync. */
  readonly previous: readonly string[];
  /**
   * True when the member list named another set of endpoints, which replaced the previous ones.
   * The same set in another order changes nothing: the client keeps its order.
   */
  readonly changed: boolean;
  /**
   * Client URLs of started voting members the client cannot use, so left out: URLs with another
   * scheme than the client's (an `http` URL for a client created with `https` ones, or the reverse),
   * and URLs that are no `host:port` URL (a unix socket).
   */
  readonly ignored: readonly string[];
}

/** Reported by the `onEndpointSync` hook after every endpoint sync, explicit or automatic. */
export interface EndpointSyncEvent {
  /** True for a sync run by the `autoSyncIntervalMs` timer. */
  readonly auto: boolean;
  /** What the sync did, when it succeeded. */
  readonly result?: EndpointSyncResult;
  /** Why it failed, when it did; the endpoints were left unchanged. */
  readonly error?: EtcdError;
}

/**
 * Endpoint discovery callbacks, part of the client's `hooks`. Optional; exceptions they throw are
 * ignored.
 */
export interface EndpointSyncHooks {
  /**
   * After every endpoint sync. Automatic syncs report their failures only here (the next interval
   * tries again), so this is where to log them.
   */
  readonly onEndpointSync?: (event: EndpointSyncEvent) => void;
}

/** The usable client URLs of the cluster's members, and the ones left out. */
export interface MemberEndpoints {
  /** Normalised client URLs of started voting members with the wanted scheme, in member order. */
  readonly endpoints: readonly string[];
  /** Client URLs of started voting members with another scheme, or not parsable. */
  readonly ignored: readonly string[];
}

/**
 * The client URLs of every started (named), non-learner member whose scheme is `https` when
 * `secure`, else `http`; duplicates dropped.
 */
export function memberEndpoints(members: readonly Member[], secure: boolean): MemberEndpoints {
  const endpoints: string[] = [];
  const ignored: string[] = [];
  for (const member of members) {
    // A member added but not started yet has no name (and no client URLs); learners serve no
    // client requests but status and reads of their own state.
    if (member.name === '' || member.isLearner) continue;
    for (const url of member.clientUrls) {
      let parsed: ReturnType<typeof parseEndpoint>;
      try {
        parsed = parseEndpoint(url);
      } catch {
        ignored.push(url);
        continue;
      }
      // A member's unix socket is on its machine, relative to its working directory: not ours.
      if (parsed.secure !== secure || parsed.url.startsWith('unix:')) ignored.push(url);
      else if (!endpoints.includes(parsed.url)) endpoints.push(parsed.url);
    }
  }
  return { endpoints, ignored };
}

/**
 * Lists the members through `connection` (with its credentials) and makes the usable client URLs
 * of the started voting members its endpoints. Throws NoMemberEndpointsError, changing nothing,
 * when there are none; MemberList failures as they come.
 */
export async function syncEndpoints(
  connection: Connection,
  cluster: ClusterClient,
  options?: CallOptions,
): Promise<EndpointSyncResult> {
  const list = await cluster.memberList(options);
  const previous = connection.endpoints;
  const secure = previous[0]!.startsWith('https:');
  const { endpoints, ignored } = memberEndpoints(list.members, secure);
  if (endpoints.length === 0) {
    const named = list.members.filter((m) => m.name !== '' && !m.isLearner).length;
    const why =
      named === 0
        ? `no started voting member among ${list.members.length}`
        : `no ${secure ? 'https' : 'http'} client URL among ${named} started voting members` +
          (ignored.length > 0 ? ` (ignored: ${ignored.join(', ')})` : '');
    throw new NoMemberEndpointsError(`endpoint sync: ${why}; endpoints unchanged`);
  }
  const known = new Set(previous);
  const changed = endpoints.length !== known.size || endpoints.some((e) => !known.has(e));
  if (changed) connection.setEndpoints(endpoints);
  return { endpoints: connection.endpoints, previous, changed, ignored };
}

/** Runs `sync` and reports it to the hook; rethrows its failure as a typed error. */
export async function reportedSync(
  sync: () => Promise<EndpointSyncResult>,
  auto: boolean,
  hooks: EndpointSyncHooks | undefined,
  closed: () => boolean,
): Promise<EndpointSyncResult> {
  const hook = hooks?.onEndpointSync;
  try {
    const result = await sync();
    callHook(hook, { auto, result });
    return result;
  } catch (error) {
    const typed = toEtcdError(error);
    // An automatic sync cut short by close() is no failure worth reporting.
    if (!(auto && closed())) callHook(hook, { auto, error: typed });
    throw typed;
  }
}

/** Largest delay setTimeout accepts. */
const MAX_INTERVAL_MS = 2 ** 31 - 1;

/** Validates the `autoSyncIntervalMs` option: undefined or 0 (off), else a positive number of ms. */
export function checkAutoSyncInterval(value: number | undefined): number {
  if (value === undefined) return 0;
  if (
    typeof value !== 'number' ||
    !Number.isFinite(value) ||
    value < 0 ||
    value > MAX_INTERVAL_MS
  ) {
    throw new InvalidConfigError(
      `autoSyncIntervalMs must be 0 (off) or a positive number of ms up to ${MAX_INTERVAL_MS}, got ${String(value)}`,
    );
  }
  return value;
}

/**
 * Runs `sync` every `intervalMs`, counted from the end of the previous run (runs never overlap).
 * Failures are the caller's to report; the next run comes anyway. The timer never keeps the
 * process alive; `stop()` cancels the next run.
 */
export class EndpointAutoSync {
  readonly #sync: () => Promise<unknown>;
  readonly #intervalMs: number;
  #timer: ReturnType<typeof setTimeout> | undefined;
  #stopped = false;

  /** Schedules the first run one interval from now. */
  constructor(sync: () => Promise<unknown>, intervalMs: number) {
    this.#sync = sync;
    this.#intervalMs = intervalMs;
    this.#schedule();
  }

  /** No more runs. A run in flight finishes (the client's close() ends its call). */
  stop(): void {
    this.#stopped = true;
    clearTimeout(this.#timer);
    this.#timer = undefined;
  }

  #schedule(): void {
    if (this.#stopped) return;
    this.#timer = setTimeout(() => {
      this.#timer = undefined;
      Promise.resolve()
        .then(this.#sync)
        .catch(() => undefined)
        .finally(() => this.#schedule());
    }, this.#intervalMs);
    this.#timer.unref();
  }
}
