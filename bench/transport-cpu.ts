// Client CPU per operation of the kinds the cross-process contention rows make (issue 28: STM
// transfers and Mutex cycles over 8 processes, where the clients' CPU is the limit): a put, a txn of
// 2 compares, 2 puts and 2 deletes, a range of RANGE_KEYS keys, a watch event received (WATCHERS
// watchers on distinct keys of one client, the writes fanned in over them) and a watch created then
// cancelled. Contenders: etcdkit as in this checkout, the `etcd3` npm package (1.1.2, grpc-js), and
// etcdkit from another checkout when ETCDKIT_BASELINE names its root (e.g. a clone of an older
// commit; its own node_modules/@etcdkit must point into it), so a change shows old vs new in one
// run. The embedded server runs in a child process (transport-server.ts, which also makes the watch
// events), so process.cpuUsage() of this process is the client's alone. Rounds rotate the order;
// each cell is the median over ETCDKIT_BENCH_ROUNDS (default 5) after an unreported warm-up round.
// Run alone: `node --conditions=etcdkit-source --import tsx bench/transport-cpu.ts`. Asserts nothing.

import { fileURLToPath, pathToFileURL } from 'node:url';
import { Etcd3 } from 'etcd3';
import * as current from '../packages/client/src/index.js';
import type { Row } from './report.js';
import { forkTransportServer, type TransportServer } from './transport-server-process.js';

const SCALE = Number(process.env.ETCDKIT_BENCH_SCALE ?? '1') || 1;
const ROUNDS = Number(process.env.ETCDKIT_BENCH_ROUNDS ?? '5') || 5;
const BASELINE = process.env.ETCDKIT_BASELINE;
const CALLS = Math.round(1_000 * SCALE);
const EVENTS = Math.round(2_000 * SCALE);
const WATCHES = Math.round(300 * SCALE);
const WATCHERS = 16;
const RANGE_KEYS = 10;
/** The idle time before each call of the paused row: a contender of the lock rows waits its turn. */
const PAUSE_MS = 5;
const PAUSED_CALLS = Math.round(200 * SCALE);

type ClientModule = typeof current;

/** The operations a row measures, the same keys and values for every client. */
interface Contender {
  put(): Promise<unknown>;
  /** The same put with the caller's AbortSignal (one that never fires), as recipes pass theirs. */
  putWithSignal?(): Promise<unknown>;
  txn(): Promise<unknown>;
  range(): Promise<unknown>;
  /** Opens `keys.length` watchers; `onEvent` for each put seen; resolves once all are created. */
  watchAll(keys: readonly string[], onEvent: () => void): Promise<() => Promise<void>>;
  /** Creates a watcher on `key`, waits until the server confirmed it, then cancels it. */
  watchOnce(key: string): Promise<void>;
  close(): Promise<void>;
}

interface ContenderKind {
  readonly name: string;
  open(endpoint: string): Contender;
}

function etcdkit(name: string, client: ClientModule): ContenderKind {
  const { Etcd, cmp, op } = client;
  return {
    name,
    open(endpoint) {
      const etcd = new Etcd({ endpoints: [endpoint] });
      const kept = new AbortController();
      return {
        put: () => etcd.put('bench/cpu/a', 'value'),
        putWithSignal: () => etcd.put('bench/cpu/a', 'value', { signal: kept.signal }),
        txn: () =>
          etcd
            .txn()
            .if(cmp.value('bench/cpu/a', '==', 'value'), cmp.version('bench/cpu/b', '<', 1000n))
            .then(
              op.put('bench/cpu/c', 'value'),
              op.put('bench/cpu/d', 'value'),
              op.delete('bench/cpu/e'),
              op.delete('bench/cpu/f'),
            )
            .commit(),
        range: () => etcd.range({ prefix: 'bench/cpu/range/' }),
        async watchAll(keys, onEvent) {
          const watchers = keys.map((key) => etcd.watch({ key }));
          for (const watcher of watchers) watcher.on('put', onEvent);
          await Promise.all(watchers.map((w) => w.ready()));
          return async () => {
            await Promise.all(watchers.map((w) => w.close()));
          };
        },
        async watchOnce(key) {
          const watcher = etcd.watch({ key });
          await watcher.ready();
          await watcher.close();
        },
        close: () => etcd.close(),
      };
    },
  };
}

const etcd3: ContenderKind = {
  name: 'etcd3 1.1.2',
  open(endpoint) {
    const client = new Etcd3({ hosts: [endpoint] });
    return {
      put: () => client.put('bench/cpu/a').value('value').exec(),
      txn: () =>
        client
          .if('bench/cpu/a', 'Value', '==', 'value')
          .and('bench/cpu/b', 'Version', '<', 1000)
          .then(
            client.put('bench/cpu/c').value('value'),
            client.put('bench/cpu/d').value('value'),
            client.delete().key('bench/cpu/e'),
            client.delete().key('bench/cpu/f'),
          )
          .commit(),
      range: () => client.getAll().prefix('bench/cpu/range/').exec(),
      async watchAll(keys, onEvent) {
        const watchers = await Promise.all(keys.map((key) => client.watch().key(key).create()));
        for (const watcher of watchers) watcher.on('put', onEvent);
        return async () => {
          await Promise.all(watchers.map((w) => w.cancel()));
        };
      },
      async watchOnce(key) {
        const watcher = await client.watch().key(key).create();
        await watcher.cancel();
      },
      close: async () => client.close(),
    };
  },
};

/** CPU µs of this process per operation while `run` makes `ops` of them. */
async function cpuPerOp(ops: number, run: () => Promise<void>): Promise<number> {
  const before = process.cpuUsage();
  await run();
  const used = process.cpuUsage(before);
  return (used.user + used.system) / ops;
}

async function sequential(count: number, call: () => Promise<unknown>): Promise<void> {
  for (let i = 0; i < count; i++) await call();
}

/**
 * `count` calls, each after PAUSE_MS idle: the process wakes for each as a lock contender does for
 * its turn (cold caches, a timer). The timer's own cost is in the figure, the same for every client.
 */
async function paused(count: number, call: () => Promise<unknown>): Promise<void> {
  for (let i = 0; i < count; i++) {
    await new Promise((resolve) => setTimeout(resolve, PAUSE_MS));
    await call();
  }
}

/** NaN for a client without the operation: its cell says so. */
type Scenario = (client: Contender, server: TransportServer) => Promise<number>;

const scenarios: ReadonlyArray<readonly [string, Scenario]> = [
  ['put', (c) => cpuPerOp(CALLS, () => sequential(CALLS, c.put))],
  [
    "put with the caller's AbortSignal",
    async (c) => {
      const put = c.putWithSignal;
      return put ? cpuPerOp(CALLS, () => sequential(CALLS, put)) : Number.NaN;
    },
  ],
  [
    `put after ${PAUSE_MS} ms idle`,
    (c) => cpuPerOp(PAUSED_CALLS, () => paused(PAUSED_CALLS, c.put)),
  ],
  ['txn: 2 compares, 2 puts, 2 deletes', (c) => cpuPerOp(CALLS, () => sequential(CALLS, c.txn))],
  [`range of ${RANGE_KEYS} keys`, (c) => cpuPerOp(CALLS, () => sequential(CALLS, c.range))],
  [
    `watch event received (${WATCHERS} watchers on distinct keys, fanned in)`,
    async (c, server) => {
      const prefix = `bench/cpu/watch/${Math.random()}/`;
      const keys = Array.from({ length: WATCHERS }, (_, i) => `${prefix}${i}`);
      let seen = 0;
      let done = () => {};
      const all = new Promise<void>((resolve) => {
        done = resolve;
      });
      const stop = await c.watchAll(keys, () => {
        if (++seen === EVENTS) done();
      });
      // Only the receiving side runs here: the writes happen in the server's process.
      const perEvent = await cpuPerOp(EVENTS, async () => {
        await server.write(prefix, EVENTS, WATCHERS);
        await all;
      });
      await stop();
      return perEvent;
    },
  ],
  [
    'watch created, then cancelled',
    (c) => cpuPerOp(WATCHES, () => sequential(WATCHES, () => c.watchOnce('bench/cpu/w'))),
  ],
];

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

async function contenders(): Promise<ContenderKind[]> {
  const kinds = [etcdkit('etcdkit', current), etcd3];
  if (BASELINE) {
    const url = pathToFileURL(`${BASELINE}/packages/client/src/index.ts`).href;
    kinds.splice(1, 0, etcdkit('etcdkit baseline', (await import(url)) as ClientModule));
  }
  return kinds;
}

async function report(): Promise<Row[]> {
  const kinds = await contenders();
  const server = await forkTransportServer();
  const results = new Map<string, number[]>();
  try {
    const seeder = new current.Etcd({ endpoints: [server.endpoints[0]!] });
    await seeder.put('bench/cpu/a', 'value');
    for (let i = 0; i < RANGE_KEYS; i++) await seeder.put(`bench/cpu/range/${i}`, 'value');
    await seeder.close();
    for (let round = 0; round <= ROUNDS; round++) {
      // Round 0 warms every client up and is not reported; later rounds rotate the order.
      const order = kinds.map((_, i) => kinds[(i + round) % kinds.length]!);
      for (const kind of order) {
        const client = kind.open(server.endpoints[0]!);
        try {
          await client.put();
          for (const [scenario, run] of scenarios) {
            const perOp = await run(client, server);
            if (round === 0) continue;
            const key = `${scenario}\u0000${kind.name}`;
            results.set(key, [...(results.get(key) ?? []), perOp]);
          }
        } finally {
          await client.close();
        }
      }
    }
  } finally {
    server.stop();
  }
  const rows: Row[] = [];
  for (const [scenario] of scenarios) {
    const reference = median(results.get(`${scenario}\u0000${etcd3.name}`) ?? [Number.NaN]);
    for (const { name } of kinds) {
      const cpu = median(results.get(`${scenario}\u0000${name}`) ?? [Number.NaN]);
      rows.push({
        operation: scenario,
        client: name,
        'client CPU µs/op': Number.isNaN(cpu) ? 'n/a' : cpu.toFixed(1),
        'vs etcd3': Number.isNaN(cpu / reference) ? 'n/a' : `${(cpu / reference).toFixed(2)}x`,
      });
    }
  }
  return rows;
}

export const transportCpuSuite = {
  name: 'transport-cpu',
  description: `client CPU per operation (put; put with the caller's AbortSignal (etcdkit only); put after ${PAUSE_MS} ms idle; txn of 2 compares, 2 puts, 2 deletes; range; a watch event fanned in over ${WATCHERS} watchers; a watch created and cancelled), etcdkit vs etcd3 1.1.2 (and etcdkit of ETCDKIT_BASELINE when set), embedded server in a child process; medians of ${ROUNDS} rounds in rotated order`,
  report,
};

if (process.argv[1] === fileURLToPath(import.meta.url)) {
  console.log(`${transportCpuSuite.name}: ${transportCpuSuite.description}`);
  console.table(await report());
  process.exit(0);
}
