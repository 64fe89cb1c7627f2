// Helpers of the lease keepalive suites: a transport that counts LeaseKeepAlive streams, and waits.
import type { Lease } from '../../src/lease/lease.js';
import type { LeaseLostError } from '../../src/lease/lease-lost.js';
import { selectTransport } from '../../src/transport/select.js';
import type { BidiStream, Channel, Transport } from '../../src/transport/types.js';

const KEEPALIVE_PATH = '/etcdserverpb.Lease/LeaseKeepAlive';

/**
 * The default transport (or ETCDKIT_TEST_TRANSPORT's), counting the LeaseKeepAlive streams it opens
 * and those still open.
 */
export interface CountingTransport extends Transport {
  /** LeaseKeepAlive streams opened since the start. */
  readonly opened: number;
  /** LeaseKeepAlive streams open now (not yet ended, failed, cancelled or returned). */
  readonly active: number;
  /** Keepalive requests written on each LeaseKeepAlive stream, in the order they opened. */
  readonly writes: readonly number[];
}

export function countingTransport(): CountingTransport {
  const inner = selectTransport(undefined);
  let opened = 0;
  let active = 0;
  const writes: number[] = [];
  const track = <Req, Res>(stream: BidiStream<Req, Res>): BidiStream<Req, Res> => {
    const index = opened++;
    writes.push(0);
    active++;
    let ended = false;
    const end = () => {
      if (ended) return;
      ended = true;
      active--;
    };
    const iterator = stream[Symbol.asyncIterator]();
    return {
      write: (request) => {
        stream.write(request);
        writes[index]!++;
      },
      end: () => stream.end(),
      cancel: () => stream.cancel(),
      [Symbol.asyncIterator]: () => ({
        next: async () => {
          try {
            const result = await iterator.next();
            if (result.done) end();
            return result;
          } catch (error) {
            end();
            throw error;
          }
        },
        return: async () => {
          end();
          return (await iterator.return?.()) ?? { done: true, value: undefined };
        },
      }),
    };
  };
  const transport: CountingTransport = {
    name: 'counting',
    get opened() {
      return opened;
    },
    get active() {
      return active;
    },
    writes,
    open(options) {
      const channel = inner.open(options);
      const wrapped: Channel = {
        target: channel.target,
        state: () => channel.state(),
        ready: (deadline, signal) => channel.ready(deadline, signal),
        unary: (method, request, callOptions) => channel.unary(method, request, callOptions),
        serverStream: (method, request, callOptions) =>
          channel.serverStream(method, request, callOptions),
        bidiStream: (method, callOptions) => {
          const stream = channel.bidiStream(method, callOptions);
          return method.path === KEEPALIVE_PATH ? track(stream) : stream;
        },
        close: () => channel.close(),
      };
      return wrapped;
    },
  };
  return transport;
}

/** Resolves after `ms`. */
export const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** Polls `condition` every 20 ms until it holds; fails after `timeoutMs`. */
export async function until(
  condition: () => boolean,
  what: string,
  timeoutMs = 5_000,
): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await sleep(20);
  }
}

/** Resolves with the next keepalive event of `lease`. */
export function nextKeepAlive(lease: Lease): Promise<unknown> {
  return new Promise((resolve) => lease.once('keepalive', resolve));
}

/** Records a lease's keepalive and lost events with their times (ms since the call). */
export function record(lease: Lease) {
  const started = performance.now();
  const keepalives: number[] = [];
  const ttls: bigint[] = [];
  let lost: { at: number; error: LeaseLostError } | undefined;
  lease.on('keepalive', (event) => {
    keepalives.push(performance.now() - started);
    ttls.push(event.ttl);
  });
  lease.on('lost', (error) => {
    lost = { at: performance.now() - started, error };
  });
  return {
    /** When recording started (performance.now()). */
    started,
    keepalives,
    ttls,
    get lost() {
      return lost;
    },
  };
}
