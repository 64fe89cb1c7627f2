// Client CPU and throughput per call of the two transports, side by side: @grpc/grpc-js (the
// default) and the node:http2 one, and for get and put the `etcd3` npm package (over its own
// @grpc/grpc-js) as the alternative to the whole client. The server (an in-memory EmbeddedEtcd)
// runs in a child process with the writer that makes watch events, so the CPU measured
// (process.cpuUsage of this process) is the client's alone. Each row runs a fixed number of
// operations after a warm-up, on the same key and value for every client; the rounds alternate
// the clients' order so all see the same machine load. ETCDKIT_BENCH_SCALE multiplies the
// operation counts (default 1). Reports numbers; asserts nothing.
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Etcd3 } from 'etcd3';
import { Etcd } from '../packages/client/src/etcd.js';
import { etcdserverpb_KV } from '../packages/client/src/generated/methods.js';
import { GrpcJsTransport } from '../packages/client/src/transport/grpc-js.js';
import { Http2Transport } from '../packages/client/src/transport/http2.js';
import type { Transport } from '../packages/client/src/transport/types.js';

const SCALE = Number(process.env.ETCDKIT_BENCH_SCALE ?? '1') || 1;
const SEQUENTIAL = Math.round(2_000 * SCALE);
const CONCURRENT = Math.round(20_000 * SCALE);
const IN_FLIGHT = 64;
const EVENTS = Math.round(4_000 * SCALE);
const ROUNDS = 2;

const script = fileURLToPath(new URL('./transport-server.ts', import.meta.url));

/** The server and event writer, in a child process. */
class ServerChild {
  #next = 0;
  readonly #waiting = new Map<number, () => void>();

  private constructor(
    readonly child: ChildProcess,
    readonly endpoints: string[],
  ) {
    child.on('message', (message: { id: number }) => {
      this.#waiting.get(message.id)?.();
      this.#waiting.delete(message.id);
    });
  }

  static async start(): Promise<ServerChild> {
    const child = fork(script, [], { execArgv: process.execArgv, stdio: 'inherit' });
    const endpoints = await new Promise<string[]>((resolve, reject) => {
      child.once('message', (message: { endpoints: string[] }) => resolve(message.endpoints));
      child.once('exit', (code) => reject(new Error(`server process exited (${code})`)));
    });
    return new ServerChild(child, endpoints);
  }

  /** Has the child's own client put `count` values to `key`, one after another. */
  write(key: string, count: number): Promise<void> {
    const id = this.#next++;
    return new Promise((resolve) => {
      this.#waiting.set(id, resolve);
      this.child.send({ id, key, count });
    });
  }

  stop(): void {
    this.child.kill('SIGTERM');
  }
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

async function inParallel(total: number, inFlight: number, op: (i: number) => Promise<unknown>) {
  let next = 0;
  await Promise.all(
    Array.from({ length: inFlight }, async () => {
      while (next < total) await op(next++);
    }),
  );
}

/** A client under test: etcdkit over one of its transports, or etcd3. */
interface Contender {
  readonly name: string;
  put(key: string, value: string): Promise<unknown>;
  get(key: string): Promise<unknown>;
  /** etcdkit's client and transport, for the rows only etcdkit has; undefined for etcd3. */
  readonly etcdkit?: { readonly etcd: Etcd; readonly transport: Transport };
  close(): Promise<void>;
}

function etcdkit(name: string, makeTransport: () => Transport) {
  return {
    name,
    open(endpoints: string[]): Contender {
      const transport = makeTransport();
      const etcd = new Etcd({ endpoints, transport });
      return {
        name,
        put: (key, value) => etcd.put(key, value),
        get: (key) => etcd.get(key),
        etcdkit: { etcd, transport },
        close: () => etcd.close(),
      };
    },
  };
}

const etcd3 = {
  name: 'etcd3',
  open(endpoints: string[]): Contender {
    const client = new Etcd3({ hosts: endpoints });
    return {
      name: 'etcd3',
      // Both resolve once the answer is decoded, as etcdkit's do (a get to the value's text).
      put: (key, value) => client.put(key).value(value).exec(),
      get: (key) => client.get(key).string(),
      close: async () => client.close(),
    };
  },
};

/** A row: undefined for a client it does not apply to. */
type Scenario = (client: Contender, server: ServerChild) => Promise<Measure> | undefined;

const bytes = (s: string) => new TextEncoder().encode(s);

const scenarios: ReadonlyArray<readonly [string, Scenario]> = [
  [
    `put, 1 in flight (${SEQUENTIAL})`,
    (client) =>
      measured(SEQUENTIAL, async () => {
        for (let i = 0; i < SEQUENTIAL; i++) await client.put('bench/put', 'value');
      }),
  ],
  [
    `get, 1 in flight (${SEQUENTIAL})`,
    (client) =>
      measured(SEQUENTIAL, async () => {
        for (let i = 0; i < SEQUENTIAL; i++) await client.get('bench/put');
      }),
  ],
  [
    `get, ${IN_FLIGHT} in flight (${CONCURRENT})`,
    (client) =>
      measured(CONCURRENT, () => inParallel(CONCURRENT, IN_FLIGHT, () => client.get('bench/put'))),
  ],
  [
    `put, ${IN_FLIGHT} in flight (${CONCURRENT})`,
    (client) =>
      measured(CONCURRENT, () =>
        inParallel(CONCURRENT, IN_FLIGHT, () => client.put('bench/put', 'value')),
      ),
  ],
  [
    `channel.unary Range only, ${IN_FLIGHT} in flight (${CONCURRENT})`,
    (client, server) => {
      if (!client.etcdkit) return undefined;
      const { transport } = client.etcdkit;
      return (async () => {
        const channel = transport.open({ target: new URL(server.endpoints[0]!).host });
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
    (client, server) => {
      if (!client.etcdkit) return undefined;
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
          await server.write(key, EVENTS);
          await all;
        });
        await watcher.close();
        return result;
      })();
    },
  ],
];

async function report() {
  const server = await ServerChild.start();
  const clients = [
    etcdkit('grpc-js', () => new GrpcJsTransport()),
    etcdkit('http2', () => new Http2Transport()),
    etcd3,
  ];
  const results = new Map<string, Measure[]>();
  try {
    for (let round = 0; round <= ROUNDS; round++) {
      // Round 0 warms every client up and is not reported; later rounds alternate the order.
      const order = round % 2 === 0 ? clients : [...clients].reverse();
      for (const { open } of order) {
        const client = open(server.endpoints);
        try {
          await client.put('bench/put', 'value');
          for (const [scenario, run] of scenarios) {
            const m = await run(client, server);
            if (round === 0 || !m) continue;
            const key = `${scenario}\u0000${client.name}`;
            results.set(key, [...(results.get(key) ?? []), m]);
          }
        } finally {
          await client.close();
        }
      }
    }
  } finally {
    server.stop();
  }
  const rows = [];
  for (const [scenario] of scenarios) {
    const per: Record<string, number> = {};
    for (const { name } of clients) {
      const ms = results.get(`${scenario}\u0000${name}`) ?? [];
      if (ms.length === 0) continue;
      const ops = ms.reduce((a, m) => a + m.ops, 0);
      const cpu = ms.reduce((a, m) => a + m.cpuMicros, 0);
      const wall = ms.reduce((a, m) => a + m.wallMs, 0);
      per[name] = cpu / ops;
      rows.push({
        scenario,
        client: name === 'etcd3' ? 'etcd3' : `etcdkit ${name}`,
        'ops/s': Math.round((ops / wall) * 1000).toLocaleString('en-US'),
        'client CPU µs/op': (cpu / ops).toFixed(1),
      });
    }
    rows.push({
      scenario,
      client: 'http2 / grpc-js',
      'ops/s': '',
      'client CPU µs/op': `${(((per.http2 ?? 0) / (per['grpc-js'] ?? 1)) * 100).toFixed(0)} %`,
    });
  }
  return rows;
}

export const transportSuite = {
  name: 'transport',
  description:
    'client CPU per operation and throughput, @grpc/grpc-js vs node:http2 transport, and the etcd3 package for get and put (server in a child process)',
  report,
};
