import { describe, expect, it } from 'vitest';
import type { RegisterInput, RegisterOutput } from '../src/models/register.js';
import { checkWatch, type WatchedEvent, type WatchStream } from '../src/models/watch.js';
import { startTarget, type TargetSpec } from '../src/target.js';
import { verify } from '../src/verify.js';
import { watchWorkload } from '../src/workloads/watch-workload.js';
import { history } from './histories.js';

const puts = history<RegisterInput, RegisterOutput>(
  [1n, 2n, 3n, 4n].map((revision, i) => ({
    p: 0,
    start: i * 2,
    end: i * 2 + 1,
    input: { type: 'put', key: `w/k${i % 2}`, value: `v${revision}` },
    output: { type: 'put', revision: revision + 10n },
  })),
);
const ev = (revision: bigint): WatchedEvent => ({
  type: 'put',
  key: `w/k${Number(revision - 1n) % 2}`,
  value: `v${revision}`,
  modRevision: revision + 10n,
});
const batch = (...revisions: bigint[]) => ({
  type: 'batch' as const,
  revision: revisions[0]! + 10n,
  events: revisions.map(ev),
});
const stream = (items: WatchStream['items'], extra: Partial<WatchStream> = {}): WatchStream => ({
  process: 1,
  prefix: 'w/',
  startRevision: 11n,
  items,
  ...extra,
});
const kinds = (streams: WatchStream[]) => checkWatch(puts, streams).map((a) => a.kind);

describe('watch guarantees', () => {
  it('accepts every put once, in order, across a resumption', () => {
    expect(
      kinds([
        stream([batch(1n), batch(2n)]),
        stream([batch(3n), batch(4n)], { startRevision: 13n, resumes: 0 }),
      ]),
    ).toEqual([]);
  });

  it('names each broken guarantee', () => {
    expect(kinds([stream([batch(1n), batch(3n)])])).toEqual(['reliable']);
    expect(kinds([stream([batch(2n), batch(1n)])])).toEqual(['ordered']);
    expect(kinds([stream([batch(1n), batch(1n)])])).toEqual(['ordered', 'atomic', 'unique']);
    // The progress notification claims all up to 13 was delivered: 12 comes late, 13 never.
    expect(kinds([stream([batch(1n), { type: 'progress', revision: 13n }, batch(2n)])])).toEqual([
      'bookmarkable',
      'reliable',
    ]);
    expect(
      kinds([stream([batch(1n)]), stream([batch(3n)], { startRevision: 12n, resumes: 0 })]),
    ).toEqual(['resumable']);
    const invented: WatchStream['items'] = [
      { type: 'batch', revision: 11n, events: [{ ...ev(1n), value: 'never' }] },
    ];
    expect(kinds([stream(invented)])).toEqual(['reliable', 'reliable']);
  });
});

describe.each<[string, TargetSpec]>([
  ['embedded', { kind: 'embedded' }],
  ['etcd', { kind: 'etcd' }],
])('watch workload [backend: %s]', (_, target) => {
  it('watchers that restart and resume see every write once, in order, through kills', {
    timeout: 120_000,
  }, async () => {
    const result = await verify({
      workload: 'watch',
      target,
      clients: 4,
      durationMs: 4_000,
      faults: ['kill'],
      faultIntervalMs: 800,
      faultDurationMs: 500,
    });
    expect(result.outcomes.ok).toBeGreaterThan(30);
    expect(result.anomalies).toEqual([]);
    expect(result.valid).toBe(true);
  });
});

// The workload is only as good as what it feeds the checker: streams must hold the writes.
it('the watch workload records streams that hold the acknowledged writes', {
  timeout: 60_000,
}, async () => {
  const t = await startTarget({ kind: 'embedded' });
  try {
    const run = await watchWorkload(t, {
      prefix: 'ww/',
      durationMs: 2_000,
      clients: 2,
      faults: [],
    });
    const delivered = run.streams.flatMap((s) =>
      s.items.flatMap((i) => (i.type === 'batch' ? i.events : [])),
    );
    const acked = run.history.filter((op) => op.status === 'ok');
    expect(run.streams.length).toBeGreaterThan(1);
    expect(delivered.length).toBeGreaterThanOrEqual(acked.length - 5);
    expect(checkWatch(run.history, run.streams)).toEqual([]);
  } finally {
    await t.stop();
  }
});
