// Watch guarantees as etcd's robustness tests name them, checked against the KV history.
import type { Anomaly } from '../checker/check.js';
import type { RegisterOperation } from './register.js';

/** One event a watcher delivered. */
export interface WatchedEvent {
  readonly type: 'put' | 'delete';
  readonly key: string;
  /** The value after a put; undefined for a delete. */
  readonly value: string | undefined;
  readonly modRevision: bigint;
}

/** What one watch stream delivered, in order: batches of events, and progress notifications. */
export interface WatchStream {
  readonly process: number;
  /** The watched keys: every key starting with this prefix. */
  readonly prefix: string;
  /** The revision it was started from (a resumed watcher: the one after the last it saw). */
  readonly startRevision: bigint;
  /** Set when this stream resumes an earlier one of the same watcher. */
  readonly resumes?: number;
  readonly items: readonly (
    | {
        readonly type: 'batch';
        readonly revision: bigint;
        readonly events: readonly WatchedEvent[];
      }
    | { readonly type: 'progress'; readonly revision: bigint }
  )[];
}

/** The guarantees: `ordered`, `unique`, `atomic`, `reliable`, `resumable`, `bookmarkable`. */
export type WatchGuarantee =
  | 'ordered'
  | 'unique'
  | 'atomic'
  | 'reliable'
  | 'resumable'
  | 'bookmarkable';

const anomaly = (
  kind: WatchGuarantee,
  stream: number,
  explanation: string,
  timeline: string[] = [],
): Anomaly => ({
  model: 'watch',
  kind,
  ops: [],
  minimal: true,
  timeline,
  explanation: `stream ${stream}: ${explanation}`,
});

/**
 * Checks watch streams against the register history of the same keys (puts with unique values):
 * - ordered: revisions strictly increase from batch to batch, every event of a batch has its
 *   revision;
 * - unique: no event is delivered twice;
 * - atomic: a revision's events come in one batch, all of them (every acknowledged put of that
 *   revision to a watched key);
 * - reliable: from its start revision to the last revision it saw, a stream misses no acknowledged
 *   put to a watched key, and delivers nothing that was not written;
 * - resumable: a resumed stream starts right after what its predecessor delivered, so together they
 *   miss nothing (checked as reliable over each stream, and the start of each resumption);
 * - bookmarkable: after a progress notification at revision p, no event at or below p arrives.
 * Only puts are checked for delivery (the workload does not delete); unknown puts may appear.
 */
export function checkWatch(
  kv: readonly RegisterOperation[],
  streams: readonly WatchStream[],
): Anomaly[] {
  const acknowledged = new Map<bigint, { key: string; value: string }[]>();
  const possible = new Set<string>();
  for (const op of kv) {
    if (op.input.type === 'get' || op.status === 'fail') continue;
    possible.add(`${op.input.key}\u0000${op.input.value}`);
    const output = op.output;
    if (op.status !== 'ok' || output === undefined) continue;
    const revision =
      output.type === 'put'
        ? output.revision
        : output.type === 'cas' && output.succeeded
          ? output.revision
          : undefined;
    if (revision === undefined) continue;
    const list = acknowledged.get(revision) ?? [];
    list.push({ key: op.input.key, value: op.input.value });
    acknowledged.set(revision, list);
  }
  const found: Anomaly[] = [];
  streams.forEach((stream, index) => {
    const seen = new Set<string>();
    let last = stream.startRevision - 1n;
    let bookmark = -1n;
    const delivered = new Set<string>();
    for (const item of stream.items) {
      if (item.type === 'progress') {
        if (item.revision > bookmark) bookmark = item.revision;
        if (item.revision > last) last = item.revision;
        continue;
      }
      if (item.revision <= last && item.revision <= bookmark) {
        found.push(
          anomaly(
            'bookmarkable',
            index,
            `revision ${item.revision} arrived after a progress notification at ${bookmark}`,
          ),
        );
      } else if (item.revision <= last) {
        found.push(
          anomaly('ordered', index, `revision ${item.revision} arrived after revision ${last}`),
        );
      }
      if (seen.has(String(item.revision)))
        found.push(
          anomaly('atomic', index, `revision ${item.revision} came in more than one batch`),
        );
      seen.add(String(item.revision));
      for (const event of item.events) {
        const id = `${event.modRevision}\u0000${event.key}`;
        if (event.modRevision !== item.revision)
          found.push(
            anomaly(
              'ordered',
              index,
              `an event of revision ${event.modRevision} in the batch of ${item.revision}`,
            ),
          );
        if (delivered.has(id))
          found.push(anomaly('unique', index, `${event.key}@${event.modRevision} delivered twice`));
        delivered.add(id);
        if (event.type === 'put' && !possible.has(`${event.key}\u0000${event.value}`))
          found.push(
            anomaly(
              'reliable',
              index,
              `${event.key}=${JSON.stringify(event.value)} at ${event.modRevision} was never written`,
            ),
          );
        const ack = acknowledged.get(event.modRevision);
        if (
          ack !== undefined &&
          event.type === 'put' &&
          !ack.some((a) => a.key === event.key && a.value === event.value)
        )
          found.push(
            anomaly(
              'reliable',
              index,
              `${event.key}=${JSON.stringify(event.value)} at ${event.modRevision}, where the KV history has ${ack.map((a) => `${a.key}=${JSON.stringify(a.value)}`).join(', ')}`,
            ),
          );
      }
      if (item.revision > last) last = item.revision;
    }
    const first = stream.items.find((i) => i.type === 'batch');
    if (
      stream.resumes !== undefined &&
      first !== undefined &&
      first.revision < stream.startRevision
    )
      found.push(
        anomaly(
          'resumable',
          index,
          `resumed from ${stream.startRevision} but delivered ${first.revision} first`,
        ),
      );
    for (const [revision, writes] of acknowledged) {
      if (revision < stream.startRevision || revision > last) continue;
      for (const w of writes) {
        if (!w.key.startsWith(stream.prefix) || delivered.has(`${revision}\u0000${w.key}`))
          continue;
        const kind: WatchGuarantee = seen.has(String(revision))
          ? 'atomic'
          : stream.resumes !== undefined
            ? 'resumable'
            : 'reliable';
        found.push(
          anomaly(
            kind,
            index,
            `missed ${w.key}=${JSON.stringify(w.value)} at revision ${revision} (watched ${stream.startRevision}..${last})`,
          ),
        );
      }
    }
  });
  return found;
}
