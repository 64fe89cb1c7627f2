// The metric instruments, created once per telemetry on its meter. Bucket advice is given for the
// histograms, so an SDK without views still gets buckets that fit etcd's latencies.
import type { Counter, Histogram, Meter } from '@opentelemetry/api';
import { EtcdMetrics as M } from './names.js';

/** Calls and keepalives: from a millisecond to etcd's default 30 s call timeout. */
const CALL_SECONDS = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30];
/** Lock waits run longer: up to minutes behind a busy holder. */
const WAIT_SECONDS = [0.001, 0.005, 0.01, 0.05, 0.1, 0.5, 1, 5, 10, 30, 60, 300];
/** Revisions: 0 is a live watcher; thousands is one catching up after an outage. */
const LAG_REVISIONS = [0, 1, 2, 5, 10, 50, 100, 500, 1_000, 5_000, 10_000];

/** Every instrument the telemetry records to. */
export interface Instruments {
  readonly callDuration: Histogram;
  readonly retries: Counter;
  readonly failovers: Counter;
  readonly watchLag: Histogram;
  readonly keepAliveDuration: Histogram;
  readonly leaseLost: Counter;
  readonly lockWait: Histogram;
}

export function createInstruments(meter: Meter): Instruments {
  const histogram = (name: string, description: string, unit: string, buckets: number[]) =>
    meter.createHistogram(name, {
      description,
      unit,
      advice: { explicitBucketBoundaries: buckets },
    });
  const counter = (name: string, description: string, unit: string) =>
    meter.createCounter(name, { description, unit });
  return {
    callDuration: histogram(
      M.CALL_DURATION,
      'Duration of etcd unary calls, retries included.',
      's',
      CALL_SECONDS,
    ),
    retries: counter(M.RETRIES, 'Failed etcd call attempts that were retried.', '{retry}'),
    failovers: counter(
      M.FAILOVERS,
      "Moves of the client's calls to another etcd endpoint.",
      '{failover}',
    ),
    watchLag: histogram(
      M.WATCH_LAG,
      "Per watch event, how many revisions the store's head was past it when sent.",
      '{revision}',
      LAG_REVISIONS,
    ),
    keepAliveDuration: histogram(
      M.LEASE_KEEPALIVE_DURATION,
      'Round trip of lease keepalives.',
      's',
      CALL_SECONDS,
    ),
    leaseLost: counter(
      M.LEASE_LOST,
      'Lease handles that stopped holding their lease, by reason.',
      '{lease}',
    ),
    lockWait: histogram(
      M.LOCK_WAIT_DURATION,
      'Time spent acquiring etcd locks, failed acquisitions included.',
      's',
      WAIT_SECONDS,
    ),
  };
}
