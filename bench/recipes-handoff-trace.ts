// Where one lock handoff between two processes spends its time, against real etcd 3.4 and the
// embedded server in its own process. Process A holds the lock (and, in a line of three, queues a
// second session behind it); process B queues last. A unlocks (in a line of three: the first
// hold, then at once the second's), and each process stamps, on the machine's monotonic clock
// (process.hrtime, one clock for every process): A's delete sent and answered; B's watch batch
// read, B's confirming read answered (a line of three only) and B's lock() resolved. Run it with
// `node --conditions=etcdkit-source --import tsx bench/recipes-handoff-trace.ts [samples]`.
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { Etcd, type WatchRequest } from '../packages/client/src/index.js';
import { type Lock, Mutex, Session } from '../packages/recipes/src/index.js';
import { startEtcd } from '../testkit/src/index.js';
import { ServerProcess } from './memory.js';

const SAMPLES = Number(process.argv[2] ?? '40') || 40;
const script = fileURLToPath(import.meta.url);
const now = () => Number(process.hrtime.bigint()) / 1e6;

type Command =
  | {
      readonly id: number;
      readonly do: 'open';
      readonly endpoint: string;
      readonly sessions: number;
    }
  | { readonly id: number; readonly do: 'lock'; readonly slot: number; readonly name: string }
  | { readonly id: number; readonly do: 'queue'; readonly slot: number; readonly name: string }
  | { readonly id: number; readonly do: 'handoff'; readonly slots: readonly number[] }
  | { readonly id: number; readonly do: 'unlock'; readonly slot: number }
  | { readonly id: number; readonly do: 'close' };

/** What a process stamped (ms on the monotonic clock). */
interface Stamps {
  deleteSent?: number;
  deleteAnswered?: number;
  batches: number[];
  txnsAnswered: number[];
  resolved?: number;
}

function child(): void {
  const sessions: Session[] = [];
  const clients: Etcd[] = [];
  const locks = new Map<number, Lock>();
  const queued = new Map<number, Promise<Lock>>();
  let stamps: Stamps = { batches: [], txnsAnswered: [] };
  const reply = (id: number, extra: object = {}) => process.send?.({ id, ...extra });
  process.on('disconnect', () => process.exit(0));
  process.on('message', async (command: Command) => {
    switch (command.do) {
      case 'open':
        for (let i = 0; i < command.sessions; i++) {
          const etcd = new Etcd({
            endpoints: [command.endpoint],
            hooks: {
              onCall: ({ method }) => {
                if (method.endsWith('/Txn')) stamps.txnsAnswered.push(now());
              },
            },
          });
          const watch = etcd.watch.bind(etcd);
          etcd.watch = (request: WatchRequest) => {
            const watcher = watch(request);
            watcher.on('batch', () => stamps.batches.push(now()));
            return watcher;
          };
          clients.push(etcd);
          sessions.push(await Session.create(etcd, { ttl: 60 }));
        }
        return reply(command.id);
      case 'lock':
        locks.set(
          command.slot,
          await new Mutex(sessions[command.slot] as Session, command.name).lock(),
        );
        return reply(command.id);
      case 'queue': {
        stamps = { batches: [], txnsAnswered: [] };
        const mutex = new Mutex(sessions[command.slot] as Session, command.name);
        const locked = mutex.lock();
        queued.set(command.slot, locked);
        const slot = command.slot;
        void locked.then((lock) => {
          stamps.resolved = now();
          locks.set(slot, lock);
          queued.delete(slot);
        });
        // Its txn and watches are out and answered well before the handoff starts.
        setTimeout(() => reply(command.id), 150);
        return;
      }
      case 'handoff': {
        // Unlock each slot in turn, the next as soon as it holds: the last unlock is the handoff.
        stamps = { batches: [], txnsAnswered: [] };
        const [first, ...rest] = command.slots;
        let lock = locks.get(first as number) as Lock;
        for (const slot of rest) {
          const next = queued.get(slot) as Promise<Lock>;
          await lock.unlock();
          lock = await next;
          locks.delete(first as number);
        }
        stamps = { batches: [], txnsAnswered: [] };
        stamps.deleteSent = now();
        await lock.unlock();
        stamps.deleteAnswered = now();
        return reply(command.id, { stamps });
      }
      case 'unlock': {
        const lock = locks.get(command.slot);
        await queued.get(command.slot);
        const held = locks.get(command.slot) ?? lock;
        locks.delete(command.slot);
        await held?.unlock();
        return reply(command.id, { stamps });
      }
      case 'close':
        for (const session of sessions) await session.close().catch(() => {});
        for (const etcd of clients) await etcd.close();
        return reply(command.id);
    }
  });
}

class Peer {
  readonly #child: ChildProcess;
  #next = 0;
  constructor() {
    this.#child = fork(script, ['child'], { execArgv: process.execArgv, stdio: 'inherit' });
  }
  ask(command: Record<string, unknown>): Promise<{ stamps?: Stamps }> {
    const id = ++this.#next;
    return new Promise((resolve) => {
      const onMessage = (answer: { id: number; stamps?: Stamps }) => {
        if (answer.id !== id) return;
        this.#child.off('message', onMessage);
        resolve(answer);
      };
      this.#child.on('message', onMessage);
      this.#child.send({ id, ...command });
    });
  }
  kill(): void {
    this.#child.kill();
  }
}

const median = (values: number[]) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted[Math.floor(sorted.length / 2)] ?? Number.NaN;
};

async function trace(server: string, endpoint: string): Promise<void> {
  const a = new Peer();
  const b = new Peer();
  try {
    await a.ask({ do: 'open', endpoint, sessions: 2 });
    await b.ask({ do: 'open', endpoint, sessions: 1 });
    for (const line of [2, 3]) {
      const rows: Record<string, number[]> = {};
      const add = (key: string, value: number | undefined) => {
        if (value === undefined) return;
        const values = rows[key] ?? [];
        values.push(value);
        rows[key] = values;
      };
      for (let i = 0; i < SAMPLES; i++) {
        const name = `trace/${Date.now()}/${line}/${i}`;
        await a.ask({ do: 'lock', slot: 0, name });
        if (line === 3) await a.ask({ do: 'queue', slot: 1, name });
        await b.ask({ do: 'queue', slot: 0, name });
        const { stamps: sent } = await a.ask({ do: 'handoff', slots: line === 3 ? [0, 1] : [0] });
        const { stamps: got } = await b.ask({ do: 'unlock', slot: 0 });
        if (sent?.deleteSent === undefined || got === undefined) continue;
        const t0 = sent.deleteSent;
        add('A: delete answered', (sent.deleteAnswered ?? Number.NaN) - t0);
        add('B: first watch batch read', (got.batches.find((t) => t >= t0) ?? Number.NaN) - t0);
        if (line === 3) {
          add(
            'B: confirming read answered',
            (got.txnsAnswered.find((t) => t >= t0) ?? Number.NaN) - t0,
          );
        }
        add('B: lock() resolved', (got.resolved ?? Number.NaN) - t0);
      }
      const cells = Object.entries(rows).map(([k, v]) => `${k} ${median(v).toFixed(2)} ms`);
      console.log(
        `${server}, line of ${line}, ${SAMPLES} handoffs, medians from A's delete sent: ${cells.join('; ')}`,
      );
    }
    await a.ask({ do: 'close' });
    await b.ask({ do: 'close' });
  } finally {
    a.kill();
    b.kill();
  }
}

async function parent(): Promise<void> {
  const etcd = await startEtcd();
  try {
    await trace(`etcd ${etcd.version}`, etcd.endpoint);
  } finally {
    await etcd.stop();
  }
  const server = await ServerProcess.start();
  try {
    await trace('EmbeddedEtcd (own process)', server.endpoints[0] as string);
  } finally {
    await server.stop();
  }
}

if (process.argv[2] === 'child') child();
else await parent();
