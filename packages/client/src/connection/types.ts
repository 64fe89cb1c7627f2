// The contract between the services (KV, Lease, Watch...) and the connection layer. Services build
// requests and shape responses; the connection picks an endpoint, adds auth and require-leader
// metadata, applies deadlines and the retry policy, and turns every failure into a typed EtcdError.
import type { MethodDescriptor } from '../generated/methods.js';
import type { BidiStream, ServerStream } from '../transport/types.js';

/**
 * How a call may be retried (see docs/guarantees.md):
 * - `read`: no side effect; retried on Unavailable and connection failures across endpoints with
 *   jittered backoff within the retry budget.
 * - `write`: retried only when the request provably never left the client; once it may have reached
 *   a server, a failure is an OutcomeUnknownError. DeadlineExceeded, Internal and Unknown are never
 *   retried.
 * - `guarded-write`: a write whose effect is guarded by a revision compare, so applying it twice is
 *   impossible; retried like a read. Only used when the caller opts in.
 */
export type RetryPolicy = 'read' | 'write' | 'guarded-write';

/** Options every public call accepts. */
export interface CallOptions {
  /** Aborts the call; it then rejects with AbortedError whose cause is the signal's reason. */
  readonly signal?: AbortSignal;
  /** Deadline for this call in milliseconds, overriding the client's default call timeout. */
  readonly timeoutMs?: number;
}

/** What services need from the connection. Every method rejects only with EtcdError subclasses. */
export interface Rpc {
  unary<Req, Res>(
    method: MethodDescriptor<Req, Res, 'unary'>,
    request: Req,
    retry: RetryPolicy,
    options?: CallOptions,
  ): Promise<Res>;
  /**
   * Opens a server stream on a ready endpoint. Failures before the first response are retried as
   * `retry` allows; later failures end the iteration with a typed error.
   */
  serverStream<Req, Res>(
    method: MethodDescriptor<Req, Res, 'server-stream'>,
    request: Req,
    retry: RetryPolicy,
    options?: CallOptions,
  ): ServerStream<Res>;
  /** Opens a bidi stream on a ready endpoint, with the current auth token and metadata. */
  bidiStream<Req, Res>(
    method: MethodDescriptor<Req, Res, 'bidi-stream'>,
    options?: CallOptions,
  ): Promise<BidiStream<Req, Res>>;
  /**
   * True once the connection was closed: every later call fails with ClientClosedError. Optional:
   * an `Rpc` without it is taken as open, and its calls say when it is not.
   */
  readonly closed?: boolean;
  /**
   * Forces a new auth token. Owners of long-lived streams (the watch stream, the lease keepalive
   * stream) call it after their stream was refused for its token, before reopening it. Optional:
   * without it, such a refusal is final. Rejects with ClientClosedError once closed.
   */
  refreshToken?(): Promise<void>;
  /**
   * Drops the connection to `endpoint` (a stream's `endpoint`, `host:port`), or to the current
   * endpoint when omitted: into backoff, its channel closed, so the next call or stream dials
   * afresh, on another endpoint if there is one. Owners of long-lived streams call it with their
   * stream's endpoint when the stream stopped answering although its connection looks ready
   * (half-open TCP, a frozen server); connections to other endpoints are left alone. Optional:
   * without it, the next stream goes wherever the next call would.
   */
  redial?(endpoint?: string): void;
}
