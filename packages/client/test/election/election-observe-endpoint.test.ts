// The endpoint a resuming ElectionClient.observe() reports is its Observe stream's own, not where
// the connection sends calls: a Connection over a scripted transport opens the stream on A, a
// unary call then fails over to B while A holds the stream's first answer, and the reports (and
// the stream's `endpoint`) still name A. No server involved, so the order of events is exact.
import { describe, expect, it } from 'vitest';
import { Connection } from '../../src/connection/connection.js';
import { ElectionObservers, observeResuming } from '../../src/election/election-observe.js';
import type {
  ObserveDisconnected,
  ObserveResumed,
} from '../../src/election/election-observe-events.js';
import { observeSettings } from '../../src/election/election-observe-options.js';
import { UnavailableError } from '../../src/errors.js';
import { etcdserverpb_KV, v3electionpb_Election } from '../../src/generated/methods.js';
import {
  type BidiStream,
  type Channel,
  type ChannelCallOptions,
  type ChannelOptions,
  type ChannelState,
  GrpcStatus,
  type ServerStream,
  type Transport,
  TransportError,
} from '../../src/transport/types.js';
import { waitFor } from '../watch/watch-support.js';

const A = '127.0.0.1:1';
const B = '127.0.0.1:2';
const enc = (value: string) => new TextEncoder().encode(value);
const text = (bytes: Uint8Array) => new TextDecoder().decode(bytes);

/** An Observe stream the test drives: its first answer waits for `answer()`, `fail()` ends it. */
interface ScriptedObserve {
  readonly target: string;
  answer(): void;
  fail(error: TransportError): void;
}

/**
 * Channels that are always ready. Unary calls to a target in `refusing` fail unsent (Unavailable,
 * so the connection moves to the next endpoint); Observe streams are recorded in `streams`, and
 * those on a target in `holding` wait for `answer()` before sending the leader.
 */
class ObserveTransport implements Transport {
  readonly name = 'scripted-observe';
  readonly streams: ScriptedObserve[] = [];
  readonly refusing = new Set<string>();
  readonly holding = new Set<string>();

  open(options: ChannelOptions): Channel {
    const transport = this;
    const target = options.target;
    let state: ChannelState = 'idle';
    return {
      target,
      state: () => state,
      async ready() {
        await Promise.resolve();
        state = 'ready';
      },
      async unary<Req, Res>(_method: unknown, _request: Req): Promise<Res> {
        await Promise.resolve();
        if (transport.refusing.has(target)) {
          throw new TransportError({
            code: GrpcStatus.Unavailable,
            details: `${target} refuses`,
            metadata: {},
            sent: false,
          });
        }
        return {} as Res;
      },
      serverStream<Req, Res>(
        _method: unknown,
        _request: Req,
        callOptions: ChannelCallOptions,
      ): ServerStream<Res> {
        let answer!: () => void;
        const answered = new Promise<void>((resolve) => {
          answer = resolve;
        });
        if (!transport.holding.has(target)) answer();
        let fail!: (error: TransportError) => void;
        const failed = new Promise<never>((_, reject) => {
          fail = reject;
        });
        failed.catch(() => undefined);
        const cancelled = () =>
          fail(
            new TransportError({
              code: GrpcStatus.Cancelled,
              details: 'cancelled',
              metadata: {},
              sent: true,
            }),
          );
        callOptions.signal?.addEventListener('abort', cancelled, { once: true });
        transport.streams.push({ target, answer, fail });
        const leader = {
          kv: { key: enc('e/1'), value: enc('one'), createRevision: 5n, modRevision: 5n },
        };
        return {
          cancel: cancelled,
          async *[Symbol.asyncIterator]() {
            try {
              await Promise.race([answered, failed]);
              yield leader as Res;
              await failed;
            } finally {
              callOptions.signal?.removeEventListener('abort', cancelled);
            }
          },
        };
      },
      bidiStream<Req, Res>(): BidiStream<Req, Res> {
        throw new Error('no bidi stream expected');
      },
      close() {
        state = 'closed';
      },
    } as Channel;
  }
}

describe('ElectionClient.observe reports its stream’s own endpoint', () => {
  it('a stream opened on A that answers after calls moved to B is reported on A, its return on B', async () => {
    const transport = new ObserveTransport();
    const connection = new Connection({
      endpoints: [`http://${A}`, `http://${B}`],
      transport,
      retry: { minDelayMs: 1, maxDelayMs: 5, jitter: false },
    });
    const disconnects: ObserveDisconnected[] = [];
    const resumes: ObserveResumed[] = [];
    const settings = observeSettings({ minReconnectDelayMs: 1, maxReconnectDelayMs: 2 }, true, {
      onObserveDisconnect: (event) => disconnects.push(event),
      onObserveResume: (event) => resumes.push(event),
    });
    const controller = new AbortController();
    const values: string[] = [];
    transport.holding.add(A);
    const observation = observeResuming(
      connection,
      new ElectionObservers(),
      { name: enc('e') },
      controller.signal,
      settings,
    );
    const ended = (async () => {
      try {
        for await (const kv of { [Symbol.asyncIterator]: () => observation }) {
          values.push(kv.text());
        }
      } catch (error) {
        return error;
      }
      return undefined;
    })();
    try {
      await waitFor(() => transport.streams.length === 1, 5_000, 'the Observe stream on A');
      expect(transport.streams[0]!.target).toBe(A);

      // A refuses a read: the connection moves to B while the stream on A has not answered yet.
      transport.refusing.add(A);
      await connection.unary(etcdserverpb_KV.Range, { key: enc('k') }, 'read');
      expect(connection.currentEndpoint).toBe(B);
      transport.streams[0]!.answer();
      await waitFor(() => values.length === 1, 5_000, 'the leader, through A');

      transport.streams[0]!.fail(
        new TransportError({
          code: GrpcStatus.Unavailable,
          details: 'connection reset',
          metadata: {},
          sent: true,
        }),
      );
      await waitFor(() => resumes.length === 1, 5_000, 'the stream reopened');

      expect(transport.streams.map((stream) => stream.target)).toEqual([A, B]);
      expect(disconnects.map((d) => [text(d.name), d.endpoint, d.error.code])).toEqual([
        ['e', A, 'UNAVAILABLE'],
      ]);
      expect(disconnects[0]!.error).toBeInstanceOf(UnavailableError);
      expect(resumes.map((r) => [text(r.name), r.endpoint, r.attempts])).toEqual([['e', B, 1]]);
      expect(values).toEqual(['one']);
    } finally {
      controller.abort();
      await ended;
      await connection.close();
    }
  });

  it("a Connection's server stream tells the endpoint it is open on, not the current one", async () => {
    const transport = new ObserveTransport();
    const connection = new Connection({
      endpoints: [`http://${A}`, `http://${B}`],
      transport,
      retry: { minDelayMs: 1, maxDelayMs: 5, jitter: false },
    });
    transport.holding.add(A);
    const stream = connection.serverStream(
      v3electionpb_Election.Observe,
      { name: enc('e') },
      'read',
    );
    try {
      // Opened when iteration starts.
      expect(stream.endpoint).toBeUndefined();
      const iterator = stream[Symbol.asyncIterator]();
      const first = iterator.next();
      await waitFor(() => transport.streams.length === 1, 5_000, 'the stream on A');
      expect(stream.endpoint).toBe(A);

      transport.refusing.add(A);
      await connection.unary(etcdserverpb_KV.Range, { key: enc('k') }, 'read');
      expect(connection.currentEndpoint).toBe(B);
      transport.streams[0]!.answer();
      expect((await first).done).toBe(false);
      expect(stream.endpoint).toBe(A);

      // It still tells once the stream has ended.
      stream.cancel();
      await expect(iterator.next()).rejects.toMatchObject({ code: 'ABORTED' });
      expect(stream.endpoint).toBe(A);
    } finally {
      await connection.close();
    }
  });
});
