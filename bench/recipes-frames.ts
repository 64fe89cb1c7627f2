// The HTTP/2 frames our client writes and reads per put and per contended lock cycle, on real etcd
// and on the embedded server (its own process): each socket write is a system call and each read a
// wakeup of the event loop, which is what a Node client's CPU per cycle goes to across processes
// (docs/benchmarks.md, "lock cycles: CPU per cycle across processes"). Run alone:
//   node --conditions=etcdkit-source --import tsx bench/recipes-frames.ts
// Prints, per server, the writes and reads per operation and the frame types in them (one line per
// distinct write or read: its frame types in order, and how many times it came). Asserts nothing.
import { Etcd } from '../packages/client/src/index.js';
import { Mutex, Session } from '../packages/recipes/src/index.js';
import { startEtcd } from '../testkit/src/index.js';
import { ServerProcess } from './memory.js';
import { watchSocketIo } from './recipes-socket-io.js';

const FRAME_TYPES = [
  'DATA',
  'HEADERS',
  '',
  'RST_STREAM',
  'SETTINGS',
  '',
  'PING',
  'GOAWAY',
  'WINDOW_UPDATE',
];

/** The socket writes and reads of this process, each as the frame types it carried. */
class FrameLog {
  readonly writes = new Map<string, number>();
  readonly reads = new Map<string, number>();

  constructor() {
    watchSocketIo(
      (chunk) => this.#count(this.writes, chunk),
      (chunk) => this.#count(this.reads, chunk),
    );
  }

  clear(): void {
    this.writes.clear();
    this.reads.clear();
  }

  /** Writes and reads per operation, and the most frequent kinds of each. */
  summary(ops: number): string {
    const total = (map: Map<string, number>) => [...map.values()].reduce((a, b) => a + b, 0);
    const kinds = (map: Map<string, number>) =>
      [...map]
        .sort((a, b) => b[1] - a[1])
        .slice(0, 5)
        .map(([frames, count]) => `    ${(count / ops).toFixed(2)}/op  ${frames}`)
        .join('\n');
    return [
      `  writes/op ${(total(this.writes) / ops).toFixed(2)}, reads/op ${(total(this.reads) / ops).toFixed(2)}`,
      '  writes:',
      kinds(this.writes),
      '  reads:',
      kinds(this.reads),
    ].join('\n');
  }

  #count(map: Map<string, number>, chunk: unknown): void {
    if (!Buffer.isBuffer(chunk)) return;
    // A chunk may start inside a frame (a long DATA): its types are a best-effort reading.
    const types: string[] = [];
    for (let at = 0; at + 9 <= chunk.length; at += 9 + chunk.readUIntBE(at, 3)) {
      const type = chunk[at + 3] ?? 0;
      types.push(FRAME_TYPES[type] || `type ${type}`);
    }
    const key = types.join(' + ');
    map.set(key, (map.get(key) ?? 0) + 1);
  }
}

const log = new FrameLog();
const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

async function measure(name: string, endpoint: string): Promise<void> {
  const etcd = new Etcd({ endpoints: [endpoint] });
  const sessions: Session[] = [];
  try {
    for (let i = 0; i < 300; i++) await etcd.put('bench/frames', String(i));
    log.clear();
    const puts = 300;
    // Paused, as a handoff's requests come: each is a wakeup of its own.
    for (let i = 0; i < puts; i++) {
      await sleep(2);
      await etcd.put('bench/frames', String(i));
    }
    console.log(`${name}: put after a 2 ms pause\n${log.summary(puts)}`);
    for (let i = 0; i < 2; i++) {
      sessions.push(await Session.create(new Etcd({ endpoints: [endpoint] }), { ttl: 60 }));
    }
    const cycles = async (ms: number) => {
      let done = 0;
      const until = performance.now() + ms;
      await Promise.all(
        sessions.map(async (session) => {
          const mutex = new Mutex(session, 'bench/frames/lock');
          while (performance.now() < until) {
            await (await mutex.lock()).unlock();
            done++;
          }
        }),
      );
      return done;
    };
    await cycles(1_000);
    log.clear();
    const done = await cycles(2_000);
    console.log(`${name}: lock cycle, 2 contenders (each its own client)\n${log.summary(done)}`);
  } finally {
    for (const session of sessions) {
      await session.close().catch(() => undefined);
      await session.etcd.close();
    }
    await etcd.close();
  }
}

const real = await startEtcd();
try {
  await measure(`etcd ${real.version}`, real.endpoint);
} finally {
  await real.stop();
}
const embedded = await ServerProcess.start();
try {
  await measure('EmbeddedEtcd (own process)', embedded.endpoints[0] as string);
} finally {
  await embedded.stop();
}
