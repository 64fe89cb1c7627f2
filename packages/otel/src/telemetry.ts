// The integration users set up: one telemetry per application (or per client), its hooks given to
// the client, the client instrumented for spans and watch lag.
import { AsyncLocalStorage } from 'node:async_hooks';
import type { Connection, ConnectionHooks, Etcd, EtcdOptions } from '@etcdkit/client';
import {
  type MeterProvider,
  metrics,
  type Tracer,
  type TracerProvider,
  trace,
} from '@opentelemetry/api';
import { traceUnaryCalls } from './call-span.js';
import { type CallRecord, combineHooks, metricHooks } from './hooks.js';
import { createInstruments, type Instruments } from './instruments.js';
import { timeLockWait } from './lock-wait.js';
import { measureWatchLag } from './watch-lag.js';

/** Options of {@link etcdTelemetry}. */
export interface EtcdTelemetryOptions {
  /** Where spans go. Default: the global tracer provider (`trace.getTracerProvider()`). */
  readonly tracerProvider?: TracerProvider;
  /**
   * Where metrics go. Default: the global meter provider as it is when `etcdTelemetry()` runs, so
   * start the OpenTelemetry SDK first.
   */
  readonly meterProvider?: MeterProvider;
  /**
   * Put the keys of requests on spans (`etcd.key`, `etcd.range_end`, `etcd.prefix`). Default true;
   * turn it off when keys carry what must not leave the process. Metrics never carry keys.
   */
  readonly recordKeys?: boolean;
}

/** Anything locked by name, such as a recipes `Mutex`: `name` and `lock(options)`. */
export interface NamedLock<L, O> {
  /** The name the wait is recorded under (`etcd.lock.name`). */
  readonly name: string;
  /** Acquires the lock. */
  lock(options?: O): Promise<L>;
}

/**
 * OpenTelemetry for etcdkit clients: hooks that feed the metrics, and instrumentation that gives
 * each unary call a span and measures watch lag. See docs/telemetry.md for every span attribute
 * and metric.
 *
 * @example
 * ```ts
 * import { Etcd } from '@etcdkit/client';
 * import { etcdTelemetry } from '@etcdkit/otel';
 *
 * const telemetry = etcdTelemetry();
 * const etcd = telemetry.instrument(
 *   new Etcd(telemetry.withHooks({ endpoints: ['http://127.0.0.1:2379'] })),
 * );
 * await etcd.put('config/a', 'v1'); // a span etcdserverpb.KV/Put, a point of etcd.client.call.duration
 * await etcd.close();
 * ```
 */
export interface EtcdTelemetry {
  /**
   * The client hooks the metrics come from (and the attempts and endpoint of spans): pass them as
   * the client's `hooks`, or use {@link withHooks} to keep your own hooks too.
   */
  readonly hooks: ConnectionHooks;
  /** `options` with {@link hooks} added to its own `hooks` (both run). */
  withHooks<O extends EtcdOptions>(options: O): O;
  /**
   * Instruments a client (an `Etcd`, or a bare `Connection`): from now on each unary call gets a
   * span, and watch streams opened from now on report their lag. Call it right after constructing
   * the client. Instrumenting a client again does nothing. Returns the client.
   */
  instrument<C extends Etcd | Connection>(client: C): C;
  /**
   * `mutex.lock(options)`, with its wait recorded under the mutex's name: a point of
   * `etcd.lock.wait.duration` and an `etcd.lock.wait` span, failed acquisitions included.
   */
  lock<L, O>(mutex: NamedLock<L, O>, options?: O): Promise<L>;
  /**
   * Any acquisition (a read lock, a semaphore permit...) with its wait recorded under `name`, like
   * {@link lock}: `telemetry.measureLockWait(rw.name, () => rw.readLock())`.
   */
  measureLockWait<T>(name: string, acquire: () => Promise<T>): Promise<T>;
}

/** The telemetry of one application's etcd clients, on the given (or global) providers. */
export function etcdTelemetry(options: EtcdTelemetryOptions = {}): EtcdTelemetry {
  return new Telemetry(options);
}

const SCOPE = '@etcdkit/otel';

class Telemetry implements EtcdTelemetry {
  readonly hooks: ConnectionHooks;
  readonly #tracer: Tracer;
  readonly #instruments: Instruments;
  readonly #calls = new AsyncLocalStorage<CallRecord>();
  readonly #recordKeys: boolean;
  readonly #instrumented = new WeakSet<Connection>();

  constructor(options: EtcdTelemetryOptions) {
    this.#tracer = (options.tracerProvider ?? trace.getTracerProvider()).getTracer(SCOPE);
    const meter = (options.meterProvider ?? metrics.getMeterProvider()).getMeter(SCOPE);
    this.#instruments = createInstruments(meter);
    this.#recordKeys = options.recordKeys ?? true;
    this.hooks = metricHooks(this.#instruments, this.#calls);
  }

  withHooks<O extends EtcdOptions>(options: O): O {
    return { ...options, hooks: combineHooks(this.hooks, options.hooks) };
  }

  instrument<C extends Etcd | Connection>(client: C): C {
    const target: Etcd | Connection = client;
    const connection = 'connection' in target ? target.connection : target;
    if (this.#instrumented.has(connection)) return client;
    this.#instrumented.add(connection);
    traceUnaryCalls(connection, {
      tracer: this.#tracer,
      calls: this.#calls,
      recordKeys: this.#recordKeys,
    });
    measureWatchLag(connection, this.#instruments);
    return client;
  }

  lock<L, O>(mutex: NamedLock<L, O>, options?: O): Promise<L> {
    return this.measureLockWait(mutex.name, () => mutex.lock(options));
  }

  measureLockWait<T>(name: string, acquire: () => Promise<T>): Promise<T> {
    return timeLockWait(this.#tracer, this.#instruments, name, acquire);
  }
}
