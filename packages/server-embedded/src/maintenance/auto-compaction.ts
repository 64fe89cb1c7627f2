// Auto-compaction (`--auto-compaction-mode`, `--auto-compaction-retention`), on the server's clock
// so that a virtual clock drives it in tests. The two modes behave as etcd's compactors do:
//
// - revision: every 5 minutes, compact to (current revision - retention), unless that is not
//   positive or is where the last compaction went.
// - periodic: keep history for the retention period. The current revision is sampled every tenth
//   of the compaction interval (the period, at most an hour), keeping the samples of the last
//   period; the oldest sample is compacted to once the first full period has passed, and then once
//   per compaction interval.
//
// A compaction that finds the revision already compacted counts as done, as in etcd.
import { type Clock, every, type Timer } from '../clock.js';
import { EtcdServerError } from '../errors.js';
import type { ServerLogger } from '../logger.js';

/** Auto-compaction settings: by time kept (periodic) or by revisions kept (revision). */
export type AutoCompactionOptions =
  | {
      /** Keep the history of the last `retentionMs` milliseconds. */
      readonly mode: 'periodic';
      /** How long history is kept, in ms; 0 disables auto-compaction. */
      readonly retentionMs: number;
    }
  | {
      /** Keep the last `retention` revisions, compacting every 5 minutes. */
      readonly mode: 'revision';
      /** How many revisions are kept; 0 disables auto-compaction. */
      readonly retention: number;
    };

/** What the compactor works on. */
export interface CompactorTarget {
  readonly clock: Clock;
  /** The store's current revision. */
  currentRevision(): number;
  /** Compacts at `revision` as a Compact request would (throws etcd's errors). */
  compact(revision: number): void;
  readonly logger: ServerLogger;
}

/** How often the revision compactor looks, as in etcd. */
export const REVISION_COMPACTION_INTERVAL_MS = 5 * 60 * 1000;
const HOUR_MS = 60 * 60 * 1000;
/** The periodic compactor samples revisions this many times per compaction interval. */
const SAMPLES_PER_INTERVAL = 10;

/** Starts auto-compaction; the timer stops it. Undefined when the retention is 0 (disabled). */
export function startAutoCompaction(
  options: AutoCompactionOptions,
  target: CompactorTarget,
): Timer | undefined {
  if (options.mode === 'revision') {
    if (options.retention <= 0) return undefined;
    return startRevisionCompactor(options.retention, target);
  }
  if (options.retentionMs <= 0) return undefined;
  return startPeriodicCompactor(options.retentionMs, target);
}

function startRevisionCompactor(retention: number, target: CompactorTarget): Timer {
  let last = 0;
  return every(target.clock, REVISION_COMPACTION_INTERVAL_MS, () => {
    const revision = target.currentRevision() - retention;
    if (revision <= 0 || revision === last) return;
    if (compact(target, revision, { 'revision-compaction-retention': retention })) last = revision;
  });
}

function startPeriodicCompactor(periodMs: number, target: CompactorTarget): Timer {
  const intervalMs = Math.min(periodMs, HOUR_MS);
  const sampleMs = intervalMs / SAMPLES_PER_INTERVAL;
  const kept = Math.floor(periodMs / sampleMs) + 1;
  // samples[0] is the revision of one period ago (or the oldest there is).
  const samples = [target.currentRevision()];
  let lastRevision = 0;
  let lastSuccess = target.clock.now();
  // The first compaction waits a whole period; later ones one compaction interval.
  let waitMs = periodMs;
  return every(target.clock, sampleMs, () => {
    const revision = samples[0]!;
    if (target.clock.now() - lastSuccess >= waitMs && revision !== lastRevision) {
      waitMs = intervalMs;
      if (compact(target, revision, { 'compact-period-ms': periodMs })) {
        lastRevision = revision;
        lastSuccess = target.clock.now();
      }
    }
    samples.push(target.currentRevision());
    if (samples.length > kept) samples.shift();
  });
}

function compact(
  target: CompactorTarget,
  revision: number,
  fields: Record<string, number>,
): boolean {
  try {
    target.compact(revision);
  } catch (error) {
    if (error instanceof EtcdServerError && error.code === 'COMPACTED') return true;
    target.logger.warn('failed auto compaction', {
      revision,
      ...fields,
      error: error instanceof Error ? error.message : String(error),
    });
    return false;
  }
  target.logger.info('completed auto compaction', { revision, ...fields });
  return true;
}
