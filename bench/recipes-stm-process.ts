// One process of bench/stm.ts' multi-process rows: `contenders` loops moving 1 between two random
// keys of `keys` with runStm for `ms` after the parent's 'go', each run with its own session's
// stmKeyLocks when `contention` is 1. Arguments: endpoint, prefix, keys, contenders, ms,
// contention. Sends 'ready', then { latencies, calls } (each transfer's ms; the unary calls made,
// by method, and 'watch msgs', the watch responses its watchers got; cpuMs, the CPU time the
// transfers took) and exits.
// With contention `token:<index>/<processes>` it measures the handoff floor instead: the processes
// pass a token round in FIFO order, process i watching only its key `<prefix>token/<i>` and putting
// the next turn's number to the next process's key when its own shows its turn: one put and one
// watch delivery a handoff, to the next process only; latencies are its times round the ring.
// With contention `floor` it measures the serial floor, alone: one range then one txn on one key,
// back to back, warmed and timed like the transfers (a process of its own, not the bench's parent).
// It runs the built packages (packages/*/dist, what users install: built-packages.ts), or with
// ETCDKIT_BENCH_CODE=source the TypeScript sources under tsx (the rows before 2026-12-07 17:45).
import type { AnyOpResponse, Compare, Op } from '../packages/client/src/index.js';
import { builtPackages } from './built-packages.js';

type ClientModule = typeof import('../packages/client/src/index.js');
type RecipesModule = typeof import('../packages/recipes/src/index.js');
type StmOptions = import('../packages/recipes/src/index.js').StmOptions;

const built = process.env.ETCDKIT_BENCH_CODE === 'source' ? undefined : await builtPackages();
const { Etcd, cmp, op } = (await import(
  built?.client ?? new URL('../packages/client/src/index.js', import.meta.url).href
)) as ClientModule;
const { Session, runStm, stmKeyLocks } = (await import(
  built?.recipes ?? new URL('../packages/recipes/src/index.js', import.meta.url).href
)) as RecipesModule;

const [endpoint, prefix, keys, contenders, ms, contention] = process.argv.slice(2);
if (!endpoint || !prefix || !keys || !contenders || !ms || !contention) {
  throw new Error('usage: endpoint prefix keys contenders ms contention');
}
// ETCDKIT_BENCH_STM_WARM_MS=<ms>: before 'ready', the same work for that long on other keys
// (`<prefix>warm/`, contended by every process alike), so the measured runs find the process's
// code compiled, as in a long-lived service; what this process knows of the measured keys (their
// contention, their values) still starts empty. Default 0: cold processes.
const warmMs = Number(process.env.ETCDKIT_BENCH_STM_WARM_MS ?? '0') || 0;
const calls: Record<string, number> = {};
const etcd = new Etcd({
  endpoints: [endpoint],
  hooks: {
    onCall: ({ method }) => {
      const name = method.slice(method.lastIndexOf('/') + 1);
      calls[name] = (calls[name] ?? 0) + 1;
    },
  },
});
// Watch responses delivered to this process's watchers (the stream's messages, minus empty ones).
const openWatch = etcd.watch.bind(etcd);
etcd.watch = (request) => {
  const watcher = openWatch(request);
  watcher.on('batch', () => {
    calls['watch msgs'] = (calls['watch msgs'] ?? 0) + 1;
  });
  return watcher;
};
// ETCDKIT_BENCH_STM_TRACE=1: every txn classified by its shape (what the contention path sent),
// failed commits by the compare that failed, and group sizes; sent as `trace`.
const trace = process.env.ETCDKIT_BENCH_STM_TRACE === '1' ? traceTxns() : undefined;
if (contention.startsWith('token:')) await passToken(contention.slice(6));
if (contention === 'floor') await serialFloor();
const session = contention === '1' ? await Session.create(etcd, { ttl: 30 }) : undefined;
const options: StmOptions = session
  ? { contention: { locks: stmKeyLocks(session, `${prefix}locks`) } }
  : {};
const count = Number(keys);
const latencies: number[] = [];
/** `contenders` loops of transfers between the keys `<at>0`..`<at>count-1` until `end`. */
const transfers = (at: string, end: number, done: number[]) =>
  Promise.all(
    Array.from({ length: Number(contenders) }, async () => {
      while (performance.now() < end) {
        const from = Math.floor(Math.random() * count);
        const to = (from + 1 + Math.floor(Math.random() * (count - 1))) % count;
        const started = performance.now();
        await runStm(
          etcd,
          async (stm) => {
            const a = Number((await stm.get(`${at}${from}`)) ?? 0);
            const b = Number((await stm.get(`${at}${to}`)) ?? 0);
            stm.put(`${at}${from}`, String(a - 1));
            stm.put(`${at}${to}`, String(b + 1));
          },
          options,
        );
        done.push(performance.now() - started);
      }
    }),
  );
if (warmMs > 0) await transfers(`${prefix}warm/`, performance.now() + warmMs, []);
process.send?.('ready');
await new Promise((resolve) => process.once('message', resolve));
// Only the calls of the transfers: not the session's grant, nor its revoke below.
for (const name of Object.keys(calls)) delete calls[name];
trace?.reset();
const cpuAtGo = process.cpuUsage();
// Traced: the CPU ms and commits so far every 500 ms, to tell a cold process from a warm one.
const ticks: Array<[number, number]> = [];
const ticking = trace && setInterval(() => ticks.push([cpuMs(cpuAtGo), latencies.length]), 500);
await transfers(prefix, performance.now() + Number(ms), latencies);
const made = { ...calls };
const cpu = cpuMs(cpuAtGo);
await session?.close();
await etcd.close();
clearInterval(ticking);
const traced = trace && { ...trace.result(), ticks };
process.send?.({ latencies, calls: made, cpuMs: cpu, trace: traced }, () => process.exit(0));

/** The CPU time this process spent since `start`, in ms (user and system). */
function cpuMs(start: NodeJS.CpuUsage): number {
  const { user, system } = process.cpuUsage(start);
  return (user + system) / 1000;
}

/**
 * The serial floor: one range then one one-compare txn on one key, back to back, from this one
 * client: the rate one key can change at. Warmed on `<prefix>warm/floor` like the transfers.
 */
async function serialFloor(): Promise<never> {
  const loop = async (key: string, end: number) => {
    await etcd.put(key, '0');
    let count = 0;
    while (performance.now() < end) {
      const { kvs } = await etcd.range({ key });
      await etcd
        .txn()
        .if(cmp.modRevision(key, '==', kvs[0]?.modRevision ?? 0n))
        .then(op.put(key, String(count)))
        .commit();
      count++;
    }
    return count;
  };
  if (warmMs > 0) await loop(`${prefix}warm/floor`, performance.now() + warmMs);
  process.send?.('ready');
  await new Promise((resolve) => process.once('message', resolve));
  for (const name of Object.keys(calls)) delete calls[name];
  const cpuAtGo = process.cpuUsage();
  const count = await loop(`${prefix}floor`, performance.now() + Number(ms));
  const made = { ...calls };
  const cpu = cpuMs(cpuAtGo);
  await etcd.close();
  process.send?.({ latencies: [], calls: made, count, cpuMs: cpu }, () => process.exit(0));
  return new Promise<never>(() => {});
}

/** The handoff floor: `ring` is `<index>/<processes>`; process i's key is `<prefix>token/<i>`. */
async function passToken(ring: string): Promise<never> {
  const [index, processes] = ring.split('/').map(Number) as [number, number];
  const key = `${prefix}token/${index}`;
  const next = `${prefix}token/${(index + 1) % processes}`;
  const watcher = etcd.watch({ key });
  await watcher.ready();
  const laps: number[] = [];
  let last: number | undefined;
  let stopped = false;
  let taken = -1;
  const take = async (turn: number) => {
    // The first turn can come both by the read below and by the watch.
    if (stopped || turn % processes !== index || turn <= taken) return;
    taken = turn;
    const now = performance.now();
    if (last !== undefined) laps.push(now - last);
    last = now;
    await etcd.put(next, String(turn + 1));
  };
  watcher.on('put', (event) => void take(Number(event.kv.text())));
  process.send?.('ready');
  await new Promise((resolve) => process.once('message', resolve));
  for (const name of Object.keys(calls)) delete calls[name];
  const cpuAtGo = process.cpuUsage();
  // The first turn is the one the parent put (on process 0's key) before 'go'.
  const start = Number((await etcd.get(key))?.text());
  if (start % processes === index) void take(start);
  await new Promise((resolve) => setTimeout(resolve, Number(ms)));
  stopped = true;
  const made = { ...calls };
  const cpu = cpuMs(cpuAtGo);
  await watcher.close();
  await etcd.close();
  const turns = laps.length + (last === undefined ? 0 : 1);
  process.send?.({ latencies: laps, calls: made, count: turns, cpuMs: cpu }, () => process.exit(0));
  return new Promise<never>(() => {});
}

/**
 * Counts the txns by shape through Txn's builder methods: the join (a put on a lease), the turn's
 * read (gets without compares), the optimistic commit (guarded by the queues being empty), a
 * turn's commit (guarded by being first: `passing` keeps the queue keys, `releasing` deletes
 * them), a release without commit. A failed commit names each compare that failed from its else
 * branch's reads (`key` changed, at the revision given; `queued`; `not first`).
 */
function traceTxns() {
  interface Shape {
    compares: Compare[];
    success: Op[];
    otherwise: Op[];
  }
  const shapes = new WeakMap<object, Shape>();
  const shapeOf = (txn: object): Shape =>
    shapes.get(txn) ?? { compares: [], success: [], otherwise: [] };
  // The Txn class of the client this process runs (built or source), through an instance.
  const proto = Object.getPrototypeOf(etcd.txn()) as Record<string, (...args: unknown[]) => object>;
  const wrap = (name: string, add: (shape: Shape, args: unknown[]) => Shape) => {
    const original = proto[name] as (...args: unknown[]) => object;
    proto[name] = function (this: object, ...args: unknown[]) {
      const next = original.apply(this, args);
      if (next !== this) shapes.set(next, add(shapeOf(this), args));
      return next;
    };
  };
  wrap('if', (s, a) => ({ ...s, compares: [...s.compares, ...(a as Compare[])] }));
  wrap('then', (s, a) => ({ ...s, success: [...s.success, ...(a as Op[])] }));
  wrap('else', (s, a) => ({ ...s, otherwise: [...s.otherwise, ...(a as Op[])] }));
  const text = (bytes: Uint8Array) => Buffer.from(bytes).toString();
  let counts: Record<string, number> = {};
  // Per key set (the queues a turn's compares name): successful passing commits since the last
  // releasing one; a releasing commit closes a group of that many + 1.
  let open = new Map<string, number>();
  let groups: number[] = [];
  let commitRevisions: string[] = [];
  let conflictRevisions: string[] = [];
  const add = (name: string) => {
    counts[name] = (counts[name] ?? 0) + 1;
  };
  const commit = proto.commit as (...args: unknown[]) => Promise<{
    succeeded: boolean;
    header: { revision: bigint };
    responses: AnyOpResponse[];
  }>;
  proto.commit = async function (this: object, ...args: unknown[]) {
    const shape = shapeOf(this);
    const kind = kindOf(shape);
    const result = await commit.apply(this, args);
    add(`${kind}${result.succeeded ? '' : ' failed'}`);
    if (kind === 'commit, passing' || kind === 'commit, releasing') {
      const set = shape.compares
        .filter((c) => c.target === 'createRevision')
        .map((c) => text(c.keys.key))
        .join(',');
      if (result.succeeded && kind === 'commit, passing') open.set(set, (open.get(set) ?? 0) + 1);
      if (result.succeeded && kind === 'commit, releasing') {
        groups.push((open.get(set) ?? 0) + 1);
        open.delete(set);
      }
    }
    if (kind.startsWith('commit') && result.succeeded) {
      commitRevisions.push(String(result.header.revision));
    }
    if (kind.startsWith('commit') && !result.succeeded) {
      for (const why of failedCompares(shape, result.responses)) add(`  ${kind}: ${why}`);
    }
    return result;
  };
  const failedCompares = (shape: Shape, responses: AnyOpResponse[]): string[] => {
    const why = new Set<string>();
    for (const c of shape.compares) {
      const key = text(c.keys.key);
      const at = shape.otherwise.findIndex(
        (o) => o.kind === 'range' && text(o.spec.interval.key) === key,
      );
      const read = responses[at];
      if (read?.kind !== 'range') continue;
      if (c.target === 'modRevision') {
        const now = read.kvs[0]?.modRevision ?? 0n;
        if (c.operator === '==' && now !== c.operand) {
          why.add('key changed');
          conflictRevisions.push(String(now));
        }
      } else if (c.target === 'createRevision' && c.operator === '==' && c.operand === 0n) {
        if (read.count > 0n) why.add('queued');
      } else if (c.target === 'createRevision' && c.operator === '>') {
        if (read.kvs.some((kv) => kv.createRevision <= (c.operand as bigint))) why.add('not first');
      }
    }
    return why.size === 0 ? ['no compare seen failing'] : [...why];
  };
  return {
    reset() {
      counts = {};
      open = new Map();
      groups = [];
      commitRevisions = [];
      conflictRevisions = [];
    },
    result: () => ({ counts, groups, commitRevisions, conflictRevisions }),
  };
}

function kindOf(shape: { compares: Compare[]; success: Op[] }): string {
  const { compares, success } = shape;
  if (success.some((o) => o.kind === 'put' && o.spec.fields.lease)) return 'join';
  if (compares.length === 0) {
    return success.every((o) => o.kind === 'range') ? 'read' : 'unguarded write';
  }
  const onQueues = compares.filter((c) => c.target === 'createRevision');
  if (onQueues.some((c) => c.operator === '==' && c.operand === 0n)) return 'commit, optimistic';
  if (onQueues.some((c) => c.operator === '>')) {
    return success.some((o) => o.kind === 'delete') ? 'commit, releasing' : 'commit, passing';
  }
  if (onQueues.some((c) => c.operator === '==')) return 'release';
  return 'commit, unguarded';
}
