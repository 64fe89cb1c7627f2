// A watch stream without gRPC: a fake call whose writes can be made to "not drain", a clock moved by
// hand, and a store written directly, so that timing-dependent rules (progress ticks, backpressure,
// catch-up) are tested exactly and without sleeping.
import { etcdserverpb } from '@etcdkit/client/protocol';
import type { Clock, Timer } from '../../src/clock.js';
import { EncodedMessage } from '../../src/encoded-message.js';
import { MvccStore } from '../../src/mvcc/store.js';
import type { MessageWriter } from '../../src/watch/response-queue.js';
import { WatchStream, type WatchStreamOptions } from '../../src/watch/watch-stream.js';
import { WatchableStore } from '../../src/watch/watchable-store.js';
import type { WireWatchCreateRequest, WireWatchResponse } from '../../src/watch/wire.js';
import { b } from '../support/bytes.js';
import { summarize } from './watch-client.js';

/** A clock whose time moves only through {@link advance}. */
export class ManualClock implements Clock {
  private time = 0;
  private readonly timers: { due: number; callback: () => void; cancelled: boolean }[] = [];

  now(): number {
    return this.time;
  }

  setTimer(callback: () => void, delayMs: number): Timer {
    const timer = { due: this.time + delayMs, callback, cancelled: false };
    this.timers.push(timer);
    return { cancel: () => (timer.cancelled = true) };
  }

  /** Moves time forward, running due timers in order (and timers they set, if due too). */
  advance(ms: number): void {
    const target = this.time + ms;
    for (;;) {
      const due = this.timers
        .filter((timer) => !timer.cancelled && timer.due <= target)
        .sort((x, y) => x.due - y.due)[0];
      if (due === undefined) break;
      due.cancelled = true;
      this.time = due.due;
      due.callback();
    }
    this.time = target;
  }

  /** Timers still waiting. */
  get pending(): number {
    return this.timers.filter((timer) => !timer.cancelled).length;
  }
}

/** A gRPC call stand-in: records what is written; while `blocked`, writes ask to wait for 'drain'. */
export class FakeCall implements MessageWriter<WireWatchResponse | EncodedMessage> {
  /** Messages as a client decodes them: encoded and decoded, exactly as on the wire. */
  readonly written: etcdserverpb.WatchResponse[] = [];
  /** The same messages' wire bytes. */
  readonly raw: Uint8Array[] = [];
  blocked = false;
  paused = false;
  private drainListeners: (() => void)[] = [];

  write(message: WireWatchResponse | EncodedMessage): boolean {
    const bytes =
      message instanceof EncodedMessage
        ? message.bytes
        : etcdserverpb.WatchResponse.encode(message).finish();
    this.raw.push(bytes);
    this.written.push(etcdserverpb.WatchResponse.decode(bytes));
    return !this.blocked;
  }

  once(_event: 'drain', listener: () => void): this {
    this.drainListeners.push(listener);
    return this;
  }

  pause(): void {
    this.paused = true;
  }

  resume(): void {
    this.paused = false;
  }

  /** The client reads again: writes succeed and 'drain' fires. */
  unblock(): void {
    this.blocked = false;
    const listeners = this.drainListeners;
    this.drainListeners = [];
    for (const listener of listeners) listener();
  }

  /** Everything written since the last call, summarized. */
  take(): ReturnType<typeof summarize>[] {
    return this.written.splice(0).map(summarize);
  }
}

/** A store, its watchable store, and streams over fake calls. */
export class Harness {
  readonly store = new MvccStore();
  readonly watchable = new WatchableStore(this.store);
  readonly clock = new ManualClock();
  readonly streams: WatchStream[] = [];

  /** Opens a stream over a fake call. */
  open(options: Partial<WatchStreamOptions> = {}): { stream: WatchStream; call: FakeCall } {
    const call = new FakeCall();
    const stream = new WatchStream(call, {
      watchable: this.watchable,
      clock: this.clock,
      progressNotifyIntervalMs: 1000,
      fragmentLimitBytes: 2 * 1024 * 1024,
      header: (revision) => ({ revision: BigInt(revision) }),
      ...options,
    });
    this.streams.push(stream);
    return { stream, call };
  }

  /** Sends a create request on `stream`. */
  create(stream: WatchStream, request: WireWatchCreateRequest): void {
    stream.handle({ createRequest: request });
  }

  /** One write request putting `value` at `key`; returns its revision. */
  put(key: string, value: string | Uint8Array): number {
    const write = this.store.write();
    write.put(b(key), typeof value === 'string' ? b(value) : value, 0n);
    return write.end()!.revision;
  }

  del(key: string): number {
    const write = this.store.write();
    write.deleteRange({ key: b(key) });
    return write.end()!.revision;
  }

  /** Lets scheduled catch-up passes run until nothing is left to do. */
  async settle(): Promise<void> {
    for (let i = 0; i < 20; i++) await new Promise((resolve) => setImmediate(resolve));
  }

  close(): void {
    for (const stream of this.streams) stream.close();
    this.watchable.close();
  }
}
