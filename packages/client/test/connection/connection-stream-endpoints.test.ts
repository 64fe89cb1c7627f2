// Which endpoint a stream holds, against a scripted transport (every branch deterministic):
// - every way a stream can stop lets go of its endpoint, so a dropped endpoint's channel closes
//   without waiting for close(): a server stream whose transport throws at once, a server stream
//   cancelled after its first response, a bidi stream cancelled (or aborted) while nobody reads it;
// - a bidi stream tells its endpoint, and `redial(endpoint)` acts on that endpoint only, not on the
//   one calls moved to since.
import { describe, expect, it, vi } from 'vitest';
import { Connection } from '../../src/connection/connection.js';
import { AbortedError } from '../../src/errors.js';
import {
  etcdserverpb_KV,
  etcdserverpb_Maintenance,
  etcdserverpb_Watch,
  type MethodDescriptor,
} from '../../src/generated/methods.js';
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

const bytes = (s: string) => new TextEncoder().encode(s);
const RANGE = etcdserverpb_KV.Range;
const SNAPSHOT = etcdserverpb_Maintenance.Snapshot;
const WATCH = etcdserverpb_Watch.Watch;

const A = 'http://127.0.0.1:1';
const B = 'http://127.0.0.1:2';
const TARGET_A = '127.0.0.1:1';
const TARGET_B = '127.0.0.1:2';

function unavailable(details: string): TransportError {
  return new TransportError({ code: GrpcStatus.Unavailable, details, metadata: {}, sent: true });
}

/** The server side of one scripted stream: what it answers, and when it ends. */
class ScriptedStream<Res> {
  readonly written: unknown[] = [];
  halfClosed = false;
  readonly #queue: Res[] = [];
  #end: { error?: unknown } | undefined;
  #wake: (() => void) | undefined;

  constructor(signal: AbortSignal | undefined) {
    signal?.addEventListener(
      'abort',
      () =>
        this.fail(
          new TransportError({
            code: GrpcStatus.Cancelled,
            details: 'Cancelled on client',
            metadata: {},
            sent: true,
          }),
        ),
      { once: true },
    );
  }

  answer(response: Res): void {
    this.#queue.push(response);
    this.#wake?.();
  }

  finish(): void {
    this.#end ??= {};
    this.#wake?.();
  }

  fail(error: unknown): void {
    this.#end ??= { error };
    this.#wake?.();
  }

  iterator(): AsyncIterator<Res> {
    return {
      next: async () => {
        for (;;) {
          const response = this.#queue.shift();
          if (response !== undefined) return { done: false, value: response };
          if (this.#end?.error !== undefined) throw this.#end.error;
          if (this.#end) return { done: true, value: undefined };
          await new Promise<void>((resolve) => {
            this.#wake = resolve;
          });
        }
      },
      return: async () => {
        this.finish();
        return { done: true, value: undefined };
      },
    };
  }
}

/**
 * A transport whose unary calls answer `{}` (or throw what `unaryFailure` returns), whose streams
 * are scripted (`throwOnOpen` makes opening throw at once), and which records the channels opened
 * and closed and the streams opened, by target.
 */
class ScriptedTransport implements Transport {
  readonly name = 'scripted';
  readonly opened: string[] = [];
  readonly closed: string[] = [];
  readonly unaryTargets: string[] = [];
  readonly streams: Array<{ target: string; stream: ScriptedStream<unknown> }> = [];
  throwOnOpen = false;
  unaryFailure: (target: string) => unknown = () => undefined;
  unaryBlock: ((target: string) => Promise<void> | undefined) | undefined;

  open(options: ChannelOptions): Channel {
    const { target } = options;
    this.opened.push(target);
    let state: ChannelState = 'idle';
    const transport = this;
    const openStream = <Res>(callOptions: ChannelCallOptions): ScriptedStream<Res> => {
      if (transport.throwOnOpen) throw new Error('the transport could not open the stream');
      const stream = new ScriptedStream<Res>(callOptions.signal);
      transport.streams.push({ target, stream });
      return stream;
    };
    return {
      target,
      state: () => state,
      async ready() {
        await Promise.resolve();
        if (state === 'closed') throw unavailable(`channel to ${target} is closed`);
        state = 'ready';
      },
      async unary<Req, Res>(
        _method: MethodDescriptor<Req, Res, 'unary'>,
        _request: Req,
      ): Promise<Res> {
        transport.unaryTargets.push(target);
        await transport.unaryBlock?.(target);
        const failure = transport.unaryFailure(target);
        if (failure !== undefined) throw failure;
        return {} as Res;
      },
      serverStream<Req, Res>(
        _method: MethodDescriptor<Req, Res, 'server-stream'>,
        _request: Req,
        callOptions: ChannelCallOptions,
      ): ServerStream<Res> {
        const stream = openStream<Res>(callOptions);
        const iterator = stream.iterator();
        return {
          cancel: () => stream.fail(unavailable('cancelled')),
          [Symbol.asyncIterator]: () => iterator,
        };
      },
      bidiStream<Req, Res>(
        _method: MethodDescriptor<Req, Res, 'bidi-stream'>,
        callOptions: ChannelCallOptions,
      ): BidiStream<Req, Res> {
        const stream = openStream<Res>(callOptions);
        const iterator = stream.iterator();
        return {
          write: (request) => {
            stream.written.push(request);
          },
          end: () => {
            stream.halfClosed = true;
          },
          cancel: () => stream.fail(unavailable('cancelled')),
          [Symbol.asyncIterator]: () => iterator,
        };
      },
      close() {
        state = 'closed';
        transport.closed.push(target);
      },
    };
  }

  /** The server side of the last stream opened. */
  lastStream<Res>(): ScriptedStream<Res> {
    return this.streams.at(-1)!.stream as ScriptedStream<Res>;
  }
}

function connect(transport: Transport): Connection {
  return new Connection({
    endpoints: [A, B],
    transport,
    retry: { minDelayMs: 1, maxDelayMs: 5, jitter: false },
  });
}

describe('a stream lets go of its endpoint however it stops', () => {
  it('a server stream whose transport throws at once: the dropped endpoint closes at once', async () => {
    const transport = new ScriptedTransport();
    const conn = connect(transport);
    try {
      transport.throwOnOpen = true;
      const stream = conn.serverStream(SNAPSHOT, {}, 'read');
      await expect(stream[Symbol.asyncIterator]().next()).rejects.toThrow(
        'the transport could not open the stream',
      );
      conn.setEndpoints([B]);
      expect(transport.closed).toEqual([TARGET_A]);
    } finally {
      await conn.close();
    }
  });

  it('a server stream cancelled after its first response, never read again', async () => {
    const transport = new ScriptedTransport();
    const conn = connect(transport);
    try {
      const stream = conn.serverStream(SNAPSHOT, {}, 'read');
      const iterator = stream[Symbol.asyncIterator]();
      const first = iterator.next();
      await vi.waitFor(() => expect(transport.streams).toHaveLength(1), { timeout: 10_000 });
      transport.lastStream<{ n: number }>().answer({ n: 1 });
      expect(await first).toEqual({ done: false, value: { n: 1 } });
      conn.setEndpoints([B]);
      expect(transport.closed).toEqual([]);
      stream.cancel();
      expect(transport.closed).toEqual([TARGET_A]);
      await expect(iterator.next()).rejects.toThrow(AbortedError);
    } finally {
      await conn.close();
    }
  });

  it('a bidi stream whose transport throws at once', async () => {
    const transport = new ScriptedTransport();
    const conn = connect(transport);
    try {
      transport.throwOnOpen = true;
      await expect(conn.bidiStream(WATCH)).rejects.toThrow(
        'the transport could not open the stream',
      );
      conn.setEndpoints([B]);
      expect(transport.closed).toEqual([TARGET_A]);
    } finally {
      await conn.close();
    }
  });

  it('a bidi stream cancelled without ever being read', async () => {
    const transport = new ScriptedTransport();
    const conn = connect(transport);
    try {
      const stream = await conn.bidiStream(WATCH);
      expect(stream.endpoint).toBe(TARGET_A);
      stream.write({ progressRequest: {} });
      conn.setEndpoints([B]);
      expect(transport.closed).toEqual([]);
      stream.cancel();
      expect(transport.closed).toEqual([TARGET_A]);
      await expect(stream[Symbol.asyncIterator]().next()).rejects.toThrow(AbortedError);
      expect(transport.closed).toEqual([TARGET_A]);
    } finally {
      await conn.close();
    }
  });

  it("a bidi stream stopped by its caller's signal, never read", async () => {
    const transport = new ScriptedTransport();
    const conn = connect(transport);
    const controller = new AbortController();
    try {
      await conn.bidiStream(WATCH, { signal: controller.signal });
      conn.setEndpoints([B]);
      expect(transport.closed).toEqual([]);
      controller.abort(new Error('done with it'));
      expect(transport.closed).toEqual([TARGET_A]);
    } finally {
      await conn.close();
    }
  });

  it('a bidi stream half-closed with end() keeps it until the server end is read', async () => {
    const transport = new ScriptedTransport();
    const conn = connect(transport);
    try {
      const stream = await conn.bidiStream(WATCH);
      const server = transport.lastStream<{ n: number }>();
      stream.end();
      expect(server.halfClosed).toBe(true);
      conn.setEndpoints([B]);
      server.answer({ n: 1 });
      server.finish();
      // Answers may still come after end(): the connection stays until the end is read.
      expect(transport.closed).toEqual([]);
      const iterator = stream[Symbol.asyncIterator]();
      expect(await iterator.next()).toEqual({ done: false, value: { n: 1 } });
      expect(transport.closed).toEqual([]);
      expect(await iterator.next()).toEqual({ done: true, value: undefined });
      expect(transport.closed).toEqual([TARGET_A]);
    } finally {
      await conn.close();
    }
  });
});

describe('Connection.redial(endpoint)', () => {
  /** A connection with a bidi stream open on A and calls moved to B (A answered Unavailable). */
  async function streamOnAcallsOnB(transport: ScriptedTransport) {
    const conn = connect(transport);
    const stream = await conn.bidiStream(WATCH);
    expect(stream.endpoint).toBe(TARGET_A);
    transport.unaryFailure = (target) =>
      target === TARGET_A ? unavailable('etcdserver: no leader') : undefined;
    await conn.unary(RANGE, { key: bytes('k') }, 'read');
    expect(transport.unaryTargets).toEqual([TARGET_A, TARGET_B]);
    expect(conn.currentEndpoint).toBe(TARGET_B);
    transport.unaryFailure = () => undefined;
    return { conn, stream };
  }

  it("redials the stream's endpoint, and leaves the one calls moved to (and its calls) alone", async () => {
    const transport = new ScriptedTransport();
    const { conn, stream } = await streamOnAcallsOnB(transport);
    try {
      let unblock!: () => void;
      const blocked = new Promise<void>((resolve) => {
        unblock = resolve;
      });
      transport.unaryBlock = (target) => (target === TARGET_B ? blocked : undefined);
      const inFlight = conn.unary(RANGE, { key: bytes('k') }, 'read');
      await vi.waitFor(() => expect(transport.unaryTargets).toHaveLength(3), { timeout: 10_000 });
      // What a stream owner does when the stream stopped answering.
      stream.cancel();
      conn.redial(stream.endpoint);
      expect(transport.closed).toEqual([TARGET_A]);
      expect(conn.currentEndpoint).toBe(TARGET_B);
      unblock();
      expect(await inFlight).toEqual({});
      transport.unaryBlock = undefined;
      // The next stream opens on B's channel, still the first one.
      const next = await conn.bidiStream(WATCH);
      expect(next.endpoint).toBe(TARGET_B);
      expect(transport.opened).toEqual([TARGET_A, TARGET_B]);
      expect(transport.closed).toEqual([TARGET_A]);
      expect(transport.unaryTargets).toEqual([TARGET_A, TARGET_B, TARGET_B]);
    } finally {
      await conn.close();
    }
  });

  it('redials the current endpoint when none is given', async () => {
    const transport = new ScriptedTransport();
    const { conn } = await streamOnAcallsOnB(transport);
    try {
      conn.redial();
      expect(transport.closed).toEqual([TARGET_B]);
    } finally {
      await conn.close();
    }
  });

  it('redials a dropped endpoint a stream still uses, and ignores one it does not use', async () => {
    const transport = new ScriptedTransport();
    const conn = connect(transport);
    try {
      const stream = await conn.bidiStream(WATCH);
      conn.setEndpoints([B]);
      conn.redial('127.0.0.1:9');
      expect(transport.closed).toEqual([]);
      conn.redial(stream.endpoint);
      expect(transport.closed).toEqual([TARGET_A]);
      stream.cancel();
      expect(transport.closed).toEqual([TARGET_A]);
    } finally {
      await conn.close();
    }
  });
});
