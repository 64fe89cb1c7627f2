// An OpenTelemetry SDK in memory for the tests: spans kept by an in-memory exporter, metrics read on
// demand by a pull reader, so a test asserts exactly what an exporter would have sent.
import type { Attributes } from '@opentelemetry/api';
import {
  type DataPoint,
  type Histogram,
  MeterProvider,
  MetricReader,
} from '@opentelemetry/sdk-metrics';
import {
  BasicTracerProvider,
  InMemorySpanExporter,
  type ReadableSpan,
  SimpleSpanProcessor,
} from '@opentelemetry/sdk-trace-base';
import { type EtcdTelemetry, type EtcdTelemetryOptions, etcdTelemetry } from '../src/index.js';

/** A reader that exports nothing: `collect()` is called by the test. */
class PullReader extends MetricReader {
  protected override onShutdown(): Promise<void> {
    return Promise.resolve();
  }
  protected override onForceFlush(): Promise<void> {
    return Promise.resolve();
  }
}

/** One data point of a metric: its attributes and value (a number, or a histogram). */
export interface Point<V> {
  readonly attributes: Attributes;
  readonly value: V;
}

/** A telemetry on in-memory providers, and what it emitted. */
export class Recorder {
  readonly exporter = new InMemorySpanExporter();
  readonly tracerProvider = new BasicTracerProvider({
    spanProcessors: [new SimpleSpanProcessor(this.exporter)],
  });
  readonly reader = new PullReader();
  readonly meterProvider = new MeterProvider({ readers: [this.reader] });
  readonly telemetry: EtcdTelemetry;

  constructor(options: Omit<EtcdTelemetryOptions, 'tracerProvider' | 'meterProvider'> = {}) {
    this.telemetry = etcdTelemetry({
      ...options,
      tracerProvider: this.tracerProvider,
      meterProvider: this.meterProvider,
    });
  }

  /** Finished spans, in the order they ended. */
  spans(): ReadableSpan[] {
    return this.exporter.getFinishedSpans();
  }

  /** Finished spans of one name. */
  spansNamed(name: string): ReadableSpan[] {
    return this.spans().filter((span) => span.name === name);
  }

  /** The points of a counter (cumulative sums). */
  async counter(name: string): Promise<Point<number>[]> {
    return (await this.#points(name)) as Point<number>[];
  }

  /** The points of a histogram. */
  async histogram(name: string): Promise<Point<Histogram>[]> {
    return (await this.#points(name)) as Point<Histogram>[];
  }

  async #points(name: string): Promise<Point<unknown>[]> {
    const { resourceMetrics, errors } = await this.reader.collect();
    if (errors.length > 0) throw new AggregateError(errors, 'metric collection failed');
    const metrics = resourceMetrics.scopeMetrics.flatMap((scope) => scope.metrics);
    const metric = metrics.find((m) => m.descriptor.name === name);
    const points: DataPoint<unknown>[] = metric?.dataPoints ?? [];
    return points.map((p) => ({ attributes: p.attributes, value: p.value }));
  }

  async shutdown(): Promise<void> {
    await this.tracerProvider.shutdown();
    await this.meterProvider.shutdown();
  }
}

/** The `host` and `port` of an `http://host:port` endpoint. */
export function hostPort(endpoint: string): { host: string; port: number } {
  const url = new URL(endpoint);
  return { host: url.hostname, port: Number(url.port) };
}
