// Client CPU per call of etcdkit beside the `etcd3` npm package (1.1.2, on @grpc/grpc-js): put,
// get, txn and range, one call at a time and 64 in flight, on a real etcd (the `etcd` on PATH, or
// ETCDKIT_ETCD_BIN, started by the benchmark) and on the embedded server. etcdkit runs on its
// default transport h2 (HTTP/2 spoken by the client itself over a socket), on http2 (gRPC framed
// over node:http2) and on grpc-js. The embedded server runs in a child
// process, and real etcd is a process of its own, so the CPU measured (process.cpuUsage of this
// process) is the client's alone. Each row runs a fixed number of calls after a warm-up round that
// is not reported; every round rotates the clients' order so all see the same machine load, and each
// cell is the median over the rounds, with its ratio to etcd3's median in the same run. Two rows only
// etcdkit has: `Channel.unary` Range alone (the transport without the client above it) and watch
// events received (embedded server only: its child makes the writes). ETCDKIT_BENCH_SCALE multiplies
// the call counts (default 1), ETCDKIT_BENCH_ROUNDS sets the measured rounds (default 5),
// ETCDKIT_BENCH_BACKENDS picks `etcd`, `embedded` or both (default both). Asserts nothing.

import { Etcd3 } from 'etcd3';
import { Etcd } from '../packages/client/src/etcd.js';
import { etcdserverpb_KV } from '../packages/client/src/generated/methods.js';
import { cmp } from '../packages/client/src/kv/compare.js';
import { op } from '../packages/client/src/kv/op.js';
import { selectTransport, type TransportName } from '../packages/client/src/transport/select.js';
import type { Transport } from '../packages/client/src/transport/types.js';
import { findEtcdBinary, startEtcd } from '../testkit/src/index.js';
import type { ChartBar } from './report.js';
import { forkTransportServer } from './transport-server-process.js';

const SCALE = Number(process.env.ETCDKIT_BENCH_SCALE ?? '1') || 1;
const ROUNDS = Number(process.env.ETCDKIT_BENCH_ROUNDS ?? '5') || 5;
const BACKENDS = (process.env.ETCDKIT_BENCH_BACKENDS ?? 'etcd,embedded').split(',');
const SEQUENTIAL = Math.round(600 * SCALE);
const CONCURRENT = Math.round(4_000 * SCALE);
const IN_FLIGHT = 64;
const EVENTS = Math.round(2_000 * SCALE);
/** Keys the range rows read: RANGE_KEYS keys of a short value under one prefix. */
const RANGE_KEYS = 10;

/** A server the clients talk to: real etcd or the embedded one, and how to make watch events. */
interface Backend {
  readonly name: string;
  readonly endpoints: readonly string[];
  /** Puts `count` values to `key` from outside this process; undefined when it cannot. */
  readonly write?: (key: string, count: number) => Promise<void>;
  stop(): Promise<void>;
}

/** The embedded server and its event writer, in a child process. */
async function embeddedBackend(): Promise<Backend> {
  const server = await forkTransportServer();
  return {
    name: 'embedded',
    endpoints: server.endpoints,
    write: (key, count) => server.write(key, count),
    stop: async () => server.stop(),
  };
}

/** A real etcd member from PATH (or ETCDKIT_ETCD_BIN), on loopback, in a temp dir. */
async function etcdBackend(): Promise<Backend | undefined> {
  const lookup = findEtcdBinary();
  if (!lookup.found) {
    console.log(`real etcd skipped: ${lookup.reason}`);
    return undefined;
  }
  const etcd = await startEtcd();
  return {
    name: `etcd ${etcd.version}`,
    endpoints: etcd.endpoints,
    stop: () => etcd.stop(),
  };
}

interface Measure {
  ops: number;
  cpuMicros: number;
  wallMs: number;
}

async function measured(ops: number, run: () => Promise<void>): Promise<Measure> {
  const cpu = process.cpuUsage();
  const started = performance.now();
  await run();
  const wallMs = performance.now() - started;
  const used = process.cpuUsage(cpu);
  return { ops, cpuMicros: used.user + used.system, wallMs };
}

async function inParallel(total: number, inFlight: number, call: () => Promise<unknown>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next++ < total) await call();
    }),
  );
}

/** The calls a row makes, the same key and values for every client. */
interface Calls {
  put(): Promise<unknown>;
  get(): Promise<unknown>;
  /** A compare on one key's value, a put when it holds. */
  txn(): Promise<unknown>;
  /** RANGE_KEYS keys under one prefix. */
  range(): Promise<unknown>;
}

/** A client under test: etcdkit over one of its transports, or etcd3. */
interface Contender extends Calls {
  /** etcdkit's client and transport, for the rows only etcdkit has; undefined for etcd3. */
  readonly etcdkit?: { readonly etcd: Etcd; readonly transport: Transport };
  close(): Promise<void>;
}

interface ContenderKind {
  readonly name: string;
  open(endpoints: readonly string[]): Contender;
}

function etcdkit(label: string, choice: TransportName | undefined): ContenderKind {
  return {
    name: label,
    open(endpoints) {
      const transport = selectTransport(choice);
      const etcd = new Etcd({ endpoints: [...endpoints], transport });
      return {
        put: () => etcd.put('bench/put', 'value'),
        get: () => etcd.get('bench/put'),
        txn: () =>
          etcd
            .txn()
            .if(cmp.value('bench/put', '==', 'value'))
            .then(op.put('bench/txn', 'value'))
            .commit(),
        range: () => etcd.range({ prefix: 'bench/range/' }),
        etcdkit: { etcd, transport },
        close: () => etcd.close(),
      };
    },
  };
}

const etcd3: ContenderKind = {
  name: 'etcd3',
  open(endpoints) {
    const client = new Etcd3({ hosts: [...endpoints] });
    return {
      // Each resolves once the answer is decoded, as etcdkit's do (a get to the value's text, a
      // range to the decoded response: the least work etcd3 offers for it).
      put: () => client.put('bench/put').value('value').exec(),
      get: () => client.get('bench/put').string(),
      txn: () =>
        client
          .if('bench/put', 'Value', '==', 'value')
          .then(client.put('bench/txn').value('value'))
          .commit(),
      range: () => client.getAll().prefix('bench/range/').exec(),
      close: async () => client.close(),
    };
  },
};

/** A row: undefined for a client or backend it does not apply to. */
type Scenario = (client: Contender, backend: Backend) => Promise<Measure> | undefined;

const bytes = (s: string) => new TextEncoder().encode(s);

function callRows(): Array<readonly [string, Scenario]> {
  const rows: Array<readonly [string, Scenario]> = [];
  for (const name of ['put', 'get', 'txn', 'range'] as const) {
    rows.push([
      `${name}, 1 in flight (${SEQUENTIAL})`,
      (client) =>
        measured(SEQUENTIAL, async () => {
          for (let i = 0; i < SEQUENTIAL; i++) await client[name]();
        }),
    ]);
    rows.push([
      `${name}, ${IN_FLIGHT} in flight (${CONCURRENT})`,
      (client) =>
        measured(CONCURRENT, () => inParallel(CONCURRENT, IN_FLIGHT, () => client[name]())),
    ]);
  }
  return rows;
}

const scenarios: ReadonlyArray<readonly [string, Scenario]> = [
  ...callRows(),
  [
    `Channel.unary Range alone, ${IN_FLIGHT} in flight (${CONCURRENT})`,
    (client, backend) => {
      if (!client.etcdkit) return undefined;
      const { transport } = client.etcdkit;
      return (async () => {
        const channel = transport.open({ target: new URL(backend.endpoints[0]!).host });
        await channel.ready(Date.now() + 5_000);
        const request = { key: bytes('bench/put') };
        try {
          return await measured(CONCURRENT, () =>
            inParallel(CONCURRENT, IN_FLIGHT, () =>
              channel.unary(etcdserverpb_KV.Range, request, {}),
            ),
          );
        } finally {
          channel.close();
        }
      })();
    },
  ],
  [
    `watch events received (${EVENTS})`,
    (client, backend) => {
      const write = backend.write;
      if (!client.etcdkit || !write) return undefined;
      const { etcd } = client.etcdkit;
      return (async () => {
        const key = `bench/watch/${Math.random()}`;
        const watcher = etcd.watch({ key });
        await watcher.ready();
        let seen = 0;
        let done: () => void = () => {};
        const all = new Promise<void>((resolve) => {
          done = resolve;
        });
        watcher.on('put', () => {
          if (++seen === EVENTS) done();
        });
        // Only the receiving side runs here: the writes happen in the child.
        const result = await measured(EVENTS, async () => {
          await write(key, EVENTS);
          await all;
        });
        await watcher.close();
        return result;
      })();
    },
  ],
];

const clients: readonly ContenderKind[] = [
  etcdkit('etcdkit (default: h2)', undefined),
  etcdkit('etcdkit http2', 'http2'),
  etcdkit('etcdkit grpc-js', 'grpc-js'),
  etcd3,
];

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = sorted.length >> 1;
  return sorted.length % 2 === 1 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2;
}

/** Seeds the keys every client reads, from an etcdkit client of its own. */
async function seed(endpoints: readonly string[]): Promise<void> {
  const etcd = new Etcd({ endpoints: [...endpoints] });
  try {
    await etcd.put('bench/put', 'value');
    for (let i = 0; i < RANGE_KEYS; i++) await etcd.put(`bench/range/${i}`, 'value');
  } finally {
    await etcd.close();
  }
}

async function measureBackend(backend: Backend): Promise<Map<string, Measure[]>> {
  await seed(backend.endpoints);
  const results = new Map<string, Measure[]>();
  for (let round = 0; round <= ROUNDS; round++) {
    // Round 0 warms every client up and is not reported; later rounds rotate the order.
    const order = clients.map((_, i) => clients[(i + round) % clients.length]!);
    for (const kind of order) {
      const client = kind.open(backend.endpoints);
      try {
        await client.get();
        for (const [scenario, run] of scenarios) {
          const m = await run(client, backend);
          if (round === 0 || !m) continue;
          const key = `${scenario}\u0000${kind.name}`;
          results.set(key, [...(results.get(key) ?? []), m]);
        }
      } finally {
        await client.close();
      }
    }
  }
  return results;
}

async function report() {
  const rows = [];
  const chart: ChartBar[] = [];
  for (const which of BACKENDS) {
    const backend = which === 'etcd' ? await etcdBackend() : await embeddedBackend();
    if (!backend) continue;
    let results: Map<string, Measure[]>;
    try {
      results = await measureBackend(backend);
    } finally {
      await backend.stop();
    }
    for (const [scenario] of scenarios) {
      const perOp = new Map<string, number>();
      for (const { name } of clients) {
        const ms = results.get(`${scenario}\u0000${name}`) ?? [];
        if (ms.length > 0) perOp.set(name, median(ms.map((m) => m.cpuMicros / m.ops)));
      }
      const reference = perOp.get(etcd3.name);
      const ours = perOp.get(clients[0]!.name);
      if (reference !== undefined && ours !== undefined && scenario.includes(' in flight')) {
        chart.push({
          group: `client CPU per call, default transport / etcd3 1.1.2 (server: ${backend.name})`,
          label: scenario.replace(/ \(\d+\)$/, ''),
          ratio: ours / reference,
        });
      }
      for (const { name } of clients) {
        const ms = results.get(`${scenario}\u0000${name}`) ?? [];
        const cpu = perOp.get(name);
        if (cpu === undefined) continue;
        rows.push({
          server: backend.name,
          scenario,
          client: name,
          'ops/s': Math.round(median(ms.map((m) => (m.ops / m.wallMs) * 1000))).toLocaleString(
            'en-US',
          ),
          'client CPU µs/op': cpu.toFixed(1),
          'vs etcd3': reference === undefined ? '' : `${(cpu / reference).toFixed(2)}x`,
        });
      }
    }
  }
  return { rows, chart };
}

export const transportSuite = {
  name: 'transport',
  description: `client CPU per call, etcdkit (default h2 transport, http2 and grpc-js) vs etcd3 1.1.2: put, get, txn, range at 1 and ${IN_FLIGHT} in flight, on real etcd and the embedded server (child process); medians of ${ROUNDS} rounds in rotated order`,
  report,
};
