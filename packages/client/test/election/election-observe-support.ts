// Helpers of the Observe resumption suites: an Rpc that counts the Observe streams an observation
// opens (and how each ended) and can hold or refuse the next openings, and a background observer.
import type { CallOptions, RetryPolicy, Rpc } from '../../src/connection/types.js';
import type { ElectionClient } from '../../src/election/election.js';
import { AbortedError, type EtcdError } from '../../src/errors.js';
import type { MethodDescriptor } from '../../src/generated/methods.js';
import type { KeyValue } from '../../src/key-value.js';
import type { BidiStream, ServerStream } from '../../src/transport/types.js';

/**
 * Passes every call to `inner`. Server streams are counted: `opened` when one starts, `responses`
 * for each message, `ended` with `ok` or the error code of each stream that ended by itself. While
 * {@link hold} is in force, a stream waits before opening (`held` counts the waiting ones) until
 * {@link release}, or fails with AbortedError if its signal aborts meanwhile. After
 * {@link refuseNext}, the next streams fail at once (`refused` counts them; they are not `opened`).
 */
export class ObserveProbe implements Rpc {
  opened = 0;
  responses = 0;
  held = 0;
  refused = 0;
  readonly ended: string[] = [];
  #gate: Promise<void> | undefined;
  #open: () => void = () => {};
  #refusals: EtcdError[] = [];

  constructor(readonly inner: Rpc) {}

  get closed(): boolean {
    return this.inner.closed ?? false;
  }

  /** Where the inner connection sends calls, when it tells (a Connection does). */
  get currentEndpoint(): string | undefined {
    return (this.inner as { readonly currentEndpoint?: string }).currentEndpoint;
  }

  /** The next `errors.length` streams fail with these errors, in order, without reaching a server. */
  refuseNext(...errors: EtcdError[]): void {
    this.#refusals.push(...errors);
  }

  redial(endpoint?: string): void {
    this.inner.redial?.(endpoint);
  }

  /** Streams opened from now on wait for {@link release}. */
  hold(): void {
    this.#gate = new Promise((resolve) => {
      this.#open = resolve;
    });
  }

  /** Lets the waiting streams open, and the later ones at once. */
  release(): void {
    this.#gate = undefined;
    this.#open();
  }

  unary<Req, Res>(
    method: MethodDescriptor<Req, Res, 'unary'>,
    request: Req,
    retry: RetryPolicy,
    options?: CallOptions,
  ): Promise<Res> {
    return this.inner.unary(method, request, retry, options);
  }

  bidiStream<Req, Res>(
    method: MethodDescriptor<Req, Res, 'bidi-stream'>,
    options?: CallOptions,
  ): Promise<BidiStream<Req, Res>> {
    return this.inner.bidiStream(method, options);
  }

  serverStream<Req, Res>(
    method: MethodDescriptor<Req, Res, 'server-stream'>,
    request: Req,
    retry: RetryPolicy,
    options?: CallOptions,
  ): ServerStream<Res> {
    const probe = this;
    let stream: ServerStream<Res> | undefined;
    return {
      cancel: () => stream?.cancel(),
      async *[Symbol.asyncIterator]() {
        const gate = probe.#gate;
        if (gate) {
          probe.held++;
          try {
            await untilAborted(gate, options?.signal);
          } finally {
            probe.held--;
          }
        }
        const refusal = probe.#refusals.shift();
        if (refusal !== undefined) {
          probe.refused++;
          throw refusal;
        }
        probe.opened++;
        stream = probe.inner.serverStream(method, request, retry, options);
        try {
          for await (const response of stream) {
            probe.responses++;
            yield response;
          }
          probe.ended.push('ok');
        } catch (error) {
          probe.ended.push((error as EtcdError).code);
          throw error;
        }
      },
    };
  }
}

/** Resolves with `promise`; rejects with AbortedError first if `signal` aborts. */
function untilAborted(promise: Promise<void>, signal: AbortSignal | undefined): Promise<void> {
  if (!signal) return promise;
  if (signal.aborted) return Promise.reject(new AbortedError({ cause: signal.reason }));
  return new Promise((resolve, reject) => {
    const onAbort = () => reject(new AbortedError({ cause: signal.reason }));
    signal.addEventListener('abort', onAbort, { once: true });
    void promise.then(() => {
      signal.removeEventListener('abort', onAbort);
      resolve();
    });
  });
}

/** An observation running in the background, as its caller sees it. */
export interface Following {
  /** The values yielded so far. */
  readonly values: string[];
  /** The key-values yielded so far. */
  readonly kvs: KeyValue[];
  /** Resolves when the iteration ended: with its error, or undefined when it just ended. */
  readonly ended: Promise<EtcdError | undefined>;
  /** Aborts the observation and waits for its end. */
  stop(): Promise<EtcdError | undefined>;
}

/** Observes `name` through `election` in the background (options as observe() takes them). */
export function follow(
  election: ElectionClient,
  name: string,
  options: { readonly resume?: boolean } = {},
): Following {
  const controller = new AbortController();
  const values: string[] = [];
  const kvs: KeyValue[] = [];
  const ended = (async () => {
    try {
      for await (const kv of election.observe(name, { ...options, signal: controller.signal })) {
        values.push(kv.text());
        kvs.push(kv);
      }
      return undefined;
    } catch (error) {
      return error as EtcdError;
    }
  })();
  return {
    values,
    kvs,
    ended,
    stop: () => {
      controller.abort();
      return ended;
    },
  };
}
