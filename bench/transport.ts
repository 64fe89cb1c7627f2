// Client CPU and throughput per call of the two transports, side by side: @grpc/grpc-js (the
// default) and the node:http2 one. The server (an in-memory EmbeddedEtcd) runs in a child process
// with the writer that makes watch events, so the CPU measured (process.cpuUsage of this process)
// is the client's alone. Each row runs a fixed number of operations after a warm-up; the rounds
// alternate transports so both see the same machine load. ETCDKIT_BENCH_SCALE multiplies the
// operation counts (default 1). Reports numbers; asserts nothing.
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
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

type Scenario = (etcd: Etcd, server: ServerChild, transport: Transport) => Promise<Measure>;

const bytes = (s: string) => new TextEncoder().encode(s);

const scenarios: ReadonlyArray<readonly [string, Scenario]> = [
  [
    `put, 1 in flight (${SEQUENTIAL})`,
    (etcd) =>
      measured(SEQUENTIAL, async () => {
        for (let i = 0; i < SEQUENTIAL; i++) await etcd.put('bench/put', 'value');
      }),
  ],
  [
    `get, 1 in flight (${SEQUENTIAL})`,
    (etcd) =>
      measured(SEQUENTIAL, async () => {
        for (let i = 0; i < SEQUENTIAL; i++) await etcd.get('bench/put');
      }),
  ],
  [
    `get, ${IN_FLIGHT} in flight (${CONCURRENT})`,
    (etcd) =>
      measured(CONCURRENT, () => inParallel(CONCURRENT, IN_FLIGHT, () => etcd.get('bench/put'))),
  ],
  [
    `put, ${IN_FLIGHT} in flight (${CONCURRENT})`,
    (etcd) =>
      measured(CONCURRENT, () =>
        inParallel(CONCURRENT, IN_FLIGHT, () => etcd.put('bench/put', 'value')),
      ),
  ],
  [
    `channel.unary Range only, ${IN_FLIGHT} in flight (${CONCURRENT})`,
    async (_etcd, server, transport) => {
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
    },
  ],
  [
    `watch events received (${EVENTS})`,
    async (etcd, server) => {
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
    },
  ],
];

async function report() {
  const server = await ServerChild.start();
  const transports: ReadonlyArray<readonly [string, () => Transport]> = [
    ['grpc-js', () => new GrpcJsTransport()],
    ['http2', () => new Http2Transport()],
  ];
  const results = new Map<string, Measure[]>();
  try {
    for (let round = 0; round <= ROUNDS; round++) {
      // Round 0 warms both transports up and is not reported; later rounds alternate the order.
      const order = round % 2 === 0 ? transports : [...transports].reverse();
      for (const [name, make] of order) {
        const transport = make();
        const etcd = new Etcd({ endpoints: server.endpoints, transport });
        try {
          await etcd.put('bench/put', 'value');
          for (const [scenario, run] of scenarios) {
            const m = await run(etcd, server, transport);
            if (round === 0) continue;
            const key = `${scenario}\u0000${name}`;
            results.set(key, [...(results.get(key) ?? []), m]);
          }
        } finally {
          await etcd.close();
        }
      }
    }
  } finally {
    server.stop();
  }
  const rows = [];
  for (const [scenario] of scenarios) {
    const per: Record<string, number> = {};
    for (const [name] of transports) {
      const ms = results.get(`${scenario}\u0000${name}`) ?? [];
      const ops = ms.reduce((a, m) => a + m.ops, 0);
      const cpu = ms.reduce((a, m) => a + m.cpuMicros, 0);
      const wall = ms.reduce((a, m) => a + m.wallMs, 0);
      per[name] = cpu / ops;
      rows.push({
        scenario,
        transport: name,
        'ops/s': Math.round((ops / wall) * 1000).toLocaleString('en-US'),
        'client CPU µs/op': (cpu / ops).toFixed(1),
      });
    }
    rows.push({
      scenario,
      transport: 'http2 / grpc-js',
      'ops/s': '',
      'client CPU µs/op': `${(((per.http2 ?? 0) / (per['grpc-js'] ?? 1)) * 100).toFixed(0)} %`,
    });
  }
  return rows;
}

export const transportSuite = {
  name: 'transport',
  description:
    'client CPU per operation and throughput, @grpc/grpc-js vs node:http2 transport (server in a child process)',
  report,
};
