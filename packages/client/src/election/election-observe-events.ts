// What a resuming ElectionClient.observe() reports when its Observe stream is lost and returns;
// the shapes follow the watch's, so a reader of one knows the other.
import type { EtcdError } from '../errors.js';

/** An observation follows its election again after its Observe stream was lost. */
export interface ObserveResumed {
  /** The election's name. */
  readonly name: Uint8Array;
  /**
   * `host:port` of the endpoint the new stream is on (the stream's own `endpoint`: exact, even
   * when other calls moved the connection to another endpoint meanwhile). For an `Rpc` whose
   * streams do not tell, where its calls went when the stream first answered (its
   * `currentEndpoint`); undefined when it tells neither.
   */
  readonly endpoint: string | undefined;
  /** From the loss of the stream to the first answer of the new one, in ms. */
  readonly disconnectedMs: number;
  /** Observe streams opened since the loss, the one that answered included (1 or more). */
  readonly attempts: number;
}

/** An observation lost its Observe stream; it reopens it by itself ({@link ObserveResumed}). */
export interface ObserveDisconnected {
  /** The election's name. */
  readonly name: Uint8Array;
  /** Why the stream was lost: its typed error (UnavailableError, NoLeaderError...). */
  readonly error: EtcdError;
  /**
   * `host:port` of the endpoint the lost stream was on (as {@link ObserveResumed.endpoint}), once
   * the stream has answered: a stream that could not be opened at all has none.
   */
  readonly endpoint: string | undefined;
}

/**
 * Election observability callbacks, part of the client's `hooks`: the Observe streams of every
 * resuming `etcd.election.observe()`. Each is optional and costs nothing when absent; exceptions
 * they throw are ignored.
 */
export interface ElectionHooks {
  /**
   * An observation lost its stream (or could not open its first one). Once per outage: reopens
   * that fail in a row are not reported again.
   */
  readonly onObserveDisconnect?: (event: ObserveDisconnected) => void;
  /** An observation follows its election again, after `onObserveDisconnect`. */
  readonly onObserveResume?: (event: ObserveResumed) => void;
}
