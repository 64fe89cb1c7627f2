// The embedded server's MVCC store in this process, this checkout's beside another one's (issue
// 28.1: the memory rework must cost no put, range or watch speed). Each round builds a fresh store
// of each build (KEYS keys written REVISIONS times each, one put a revision) and times, on it:
// puts (with no watcher, and with a commit listener reading each event: the live watch path),
// single-key gets, ranges of RANGE_KEYS keys, the history read of every revision from the first as
// KeyValues (changesAt, each event's fields read), a watch's catch-up from the first revision as
// a watch stream writes it (the build's WatchableStore and WatchStream, every response encoded to
// its wire bytes as the gRPC call would; both builds must write the same number of bytes), HashKV
// and a snapshot's encoding. The builds alternate first and second round by round (ABBA); the table
// gives each build's median and the median of the rounds' ratios.
// ETCDKIT_BENCH_SERVER_BEFORE: the other build's packages/server-embedded/src/index.ts (as for the
// server-memory suite); without it only this checkout runs. ETCDKIT_BENCH_SERVER_MVCC_ROUNDS
// (default 6) and ETCDKIT_BENCH_SERVER_MVCC_KEYS (default 10,000) change the sizes.
// Run alone: node --conditions=etcdkit-source --import tsx bench/server-mvcc.ts
import { fileURLToPath } from 'node:url';
import { etcdserverpb } from '@etcdkit/client/protocol';
import type { KeyValue } from '../packages/server-embedded/src/mvcc/types.js';
import { median, ratio } from './report.js';

const ROUNDS = Number(process.env.ETCDKIT_BENCH_SERVER_MVCC_ROUNDS ?? 6);
const KEYS = Number(process.env.ETCDKIT_BENCH_SERVER_MVCC_KEYS ?? 10_000);
const REVISIONS = 20;
const GETS = 200_000;
const RANGE_KEYS = 1000;
const RANGES = 200;
const BEFORE = process.env.ETCDKIT_BENCH_SERVER_BEFORE;
const HERE = fileURLToPath(new URL('../packages/server-embedded/src/index.ts', import.meta.url));

/** What the bench uses of a build's store and snapshot modules (equal in both builds). */
interface StoreModule {
  MvccStore: new () => Store;
}
interface Store {
  readonly revision: number;
  write(): {
    put(key: Uint8Array, value: Uint8Array, lease: bigint): number;
    end(): unknown;
  };
  range(
    range: { key: Uint8Array; end?: Uint8Array },
    options?: { limit?: number },
  ): { kvs: readonly KeyValue[] };
  changesAt(revision: number): { events: readonly { type: string; kv: KeyValue }[] };
  subscribe(listener: (committed: { events: readonly { kv: KeyValue }[] }) => void): () => void;
  hashKV(revision: number): { hash: number };
  readonly history: {
    readonly bytes: number;
    upTo(main: number): Iterable<unknown>;
    visitUpTo(main: number, visitor: object): void;
  };
}
interface SnapshotModule {
  /** Builds before 1ebdb3e take the history's changes up to the revision, later ones the history. */
  encodeSnapshot(metadata: object, history: object): Uint8Array;
}

/** What the bench uses of a build's watch modules (equal in both builds). */
interface WatchModules {
  WatchableStore: new (store: Store) => { readonly unsyncedSize: number; close(): void };
  WatchStream: new (
    call: object,
    options: object,
  ) => { handle(request: etcdserverpb.WatchRequest.$Properties): void; close(): void };
}

interface Build {
  readonly name: string;
  readonly store: StoreModule;
  readonly snapshot: SnapshotModule;
  readonly watch: WatchModules;
}

async function load(name: string, index: string): Promise<Build> {
  const src = index.slice(0, index.lastIndexOf('/'));
  return {
    name,
    store: (await import(`${src}/mvcc/store.ts`)) as StoreModule,
    snapshot: (await import(`${src}/maintenance/snapshot.ts`)) as SnapshotModule,
    watch: {
      ...((await import(`${src}/watch/watchable-store.ts`)) as Pick<
        WatchModules,
        'WatchableStore'
      >),
      ...((await import(`${src}/watch/watch-stream.ts`)) as Pick<WatchModules, 'WatchStream'>),
    },
  };
}

const encoder = new TextEncoder();
const keys = Array.from({ length: KEYS }, (_, i) =>
  encoder.encode(`key/${String(i).padStart(6, '0')}`),
);
const VALUE = encoder.encode('v'.repeat(100));
const RANGE_END = encoder.encode('key0');

/** Sums a kv's fields so that reading them cannot be optimized away. */
function touch(kv: KeyValue): number {
  return kv.key.length + kv.value.length + kv.createRevision + kv.version + Number(kv.lease);
}

type Rates = Record<string, number>;

/** Bytes each build's catch-up wrote in its last round: they must be equal. */
const catchUpBytes = new Map<string, number>();

/**
 * A watch of every key from revision 2 on `store`, through the build's WatchableStore and
 * WatchStream to a call that encodes each response as the gRPC call does; resolves with the bytes
 * written once the watch has caught up.
 */
async function catchUp(build: Build, store: Store): Promise<number> {
  const watchable = new build.watch.WatchableStore(store);
  let bytes = 0;
  const call = {
    write(message: etcdserverpb.WatchResponse.$Properties | { bytes: Uint8Array }): boolean {
      bytes +=
        'bytes' in message
          ? message.bytes.length
          : etcdserverpb.WatchResponse.encode(message).finish().length;
      return true;
    },
    once: () => call,
    pause() {},
    resume() {},
  };
  const stream = new build.watch.WatchStream(call, {
    watchable,
    clock: { now: () => 0, setTimer: () => ({ cancel() {} }) },
    progressNotifyIntervalMs: 600_000,
    fragmentLimitBytes: 2 ** 30,
    header: (revision: number) => ({
      clusterId: 14841639068965178418n,
      memberId: 10276657743932975437n,
      revision: BigInt(revision),
      raftTerm: 2n,
    }),
  });
  const zero = new Uint8Array([0]);
  stream.handle({ createRequest: { key: zero, rangeEnd: zero, startRevision: 2n } });
  do await new Promise((resolve) => setImmediate(resolve));
  while (watchable.unsyncedSize > 0);
  stream.close();
  watchable.close();
  return bytes;
}

async function measure(build: Build): Promise<Rates> {
  const rates: Rates = {};
  const timed = (row: string, count: number, work: () => void) => {
    const started = performance.now();
    work();
    rates[row] = (count * 1000) / (performance.now() - started);
  };
  const store = new build.store.MvccStore();
  const puts = KEYS * REVISIONS;
  let sink = 0;
  const write = (round: number) => {
    for (let i = 0; i < KEYS; i++) {
      const w = store.write();
      w.put(keys[i]!, VALUE, BigInt(round & 1));
      w.end();
    }
  };
  timed('puts/s', (puts / 2) | 0, () => {
    for (let r = 0; r < REVISIONS / 2; r++) write(r);
  });
  const unsubscribe = store.subscribe((committed) => {
    for (const event of committed.events) sink += touch(event.kv);
  });
  timed('puts/s with a live watch', puts - ((puts / 2) | 0), () => {
    for (let r = REVISIONS / 2; r < REVISIONS; r++) write(r);
  });
  unsubscribe();
  timed('single gets/s', GETS, () => {
    for (let i = 0; i < GETS; i++)
      sink += touch(store.range({ key: keys[(i * 7919) % KEYS]! }).kvs[0]!);
  });
  timed(`${RANGE_KEYS}-key ranges/s`, RANGES, () => {
    for (let i = 0; i < RANGES; i++) {
      const from = keys[(i * 37) % (KEYS - RANGE_KEYS)]!;
      for (const kv of store.range({ key: from, end: RANGE_END }, { limit: RANGE_KEYS }).kvs) {
        sink += touch(kv);
      }
    }
  });
  timed('history read as KeyValues from revision 2 (changesAt), events/s', puts, () => {
    for (let revision = 2; revision <= store.revision; revision++) {
      for (const event of store.changesAt(revision).events) sink += touch(event.kv);
    }
  });
  const started = performance.now();
  catchUpBytes.set(build.name, await catchUp(build, store));
  rates['watch catch-up from revision 2 to wire bytes, events/s'] =
    (puts * 1000) / (performance.now() - started);
  timed('HashKV, changes/s', puts, () => {
    sink += store.hashKV(0).hash;
  });
  const metadata = {
    version: '',
    clusterId: 0n,
    memberId: 0n,
    revision: store.revision,
    compactRevision: -1,
    members: [],
    leases: [],
    alarms: [],
  };
  timed('snapshot, changes/s', puts, () => {
    // Both forms in one: iterable (older builds) and the history's visitor (newer ones).
    const history = store.history;
    const changes = {
      bytes: history.bytes,
      visitUpTo: (main: number, visitor: object) => history.visitUpTo(main, visitor),
      [Symbol.iterator]: () => history.upTo(store.revision)[Symbol.iterator](),
    };
    sink += build.snapshot.encodeSnapshot(metadata, changes).length;
  });
  if (sink === 0.5) console.log(sink);
  return rates;
}

async function report(): Promise<Array<Record<string, string>>> {
  const builds = [await load('now', HERE)];
  if (BEFORE !== undefined) builds.push(await load('before', BEFORE));
  const samples = new Map<string, Rates[]>(builds.map((b) => [b.name, []]));
  // One round of each first, unmeasured: the JIT warms on both builds' code.
  for (const build of builds) await measure(build);
  for (let round = 0; round < ROUNDS; round++) {
    const order = round % 4 === 1 || round % 4 === 2 ? [...builds].reverse() : builds;
    for (const build of order) samples.get(build.name)!.push(await measure(build));
    const written = new Set(catchUpBytes.values());
    if (written.size > 1) throw new Error(`catch-up wrote different bytes: ${[...catchUpBytes]}`);
  }
  const rows: Array<Record<string, string>> = [];
  const now = samples.get('now')!;
  for (const row of Object.keys(now[0]!)) {
    const line: Record<string, string> = {
      row,
      now: Math.round(median(now.map((s) => s[row]!))).toLocaleString('en-US'),
    };
    const before = samples.get('before');
    if (before !== undefined) {
      line.before = Math.round(median(before.map((s) => s[row]!))).toLocaleString('en-US');
      line['now / before'] = ratio(median(now.map((s, i) => s[row]! / before[i]![row]!)), 1);
    }
    rows.push(line);
  }
  return rows;
}

/** The in-process MVCC speed suite: see the header. */
export const serverMvccSuite = {
  name: 'server-mvcc',
  description: `the embedded server's MVCC store in process (${KEYS.toLocaleString('en-US')} keys x ${REVISIONS} puts of 100 B): puts, single gets, ${RANGE_KEYS}-key ranges, watch catch-up, HashKV and snapshot per second${BEFORE === undefined ? '' : ', this checkout beside ETCDKIT_BENCH_SERVER_BEFORE'}; medians of ${ROUNDS} rounds, builds alternated ABBA; the ratio is the median of the rounds' ratios`,
  report,
};

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(serverMvccSuite.description);
  console.table(await report());
}
