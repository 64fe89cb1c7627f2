// The README's demo: `npm start` (embedded server) or `npm start -- --endpoints http://127.0.0.1:2379`.
//
// Four workers increment one shared counter with optimistic transactions (compare the revision they
// read, write only if nobody wrote in between), while a watcher prints every change as it happens
// and a kept-alive lease holds a "presence" key. It ends by itself with a summary and exit code 0,
// or exit code 1 if the final state is not exactly what the workers acknowledged.
import { cmp, Etcd, type KV, OutcomeUnknownError, op } from '@etcdkit/client';
import { EmbeddedEtcd } from '@etcdkit/server-embedded';

const WORKERS = 4;
const INCREMENTS_PER_WORKER = 5;

function parseEndpoints(argv: readonly string[]): string[] | undefined {
  const at = argv.indexOf('--endpoints');
  const value = at >= 0 ? argv[at + 1] : argv.find((a) => a.startsWith('--endpoints='))?.slice(12);
  return value ? value.split(',').filter(Boolean) : undefined;
}

const started = Date.now();
const stamp = () => `+${String(Date.now() - started).padStart(5, ' ')}ms`;
const log = (who: string, message: string) =>
  console.log(`${stamp()}  ${who.padEnd(10)} ${message}`);

async function increment(etcd: KV, key: string, worker: string): Promise<number> {
  let conflicts = 0;
  for (;;) {
    const current = await etcd.get(key);
    const value = current ? Number(current.text()) : 0;
    const guard = current ? cmp.modRevision(key, '==', current.modRevision) : cmp.missing(key);
    try {
      const result = await etcd
        .txn()
        .if(guard)
        .then(op.put(key, String(value + 1)))
        .commit({ retry: 'guarded' });
      if (result.succeeded) {
        log(worker, `${value} -> ${value + 1} at revision ${result.header.revision}`);
        return conflicts;
      }
    } catch (error) {
      // The guard makes a second application impossible: re-read and try again.
      if (!(error instanceof OutcomeUnknownError)) throw error;
    }
    conflicts++;
    log(worker, `conflict on ${value}: someone wrote first, retrying`);
  }
}

async function main(): Promise<void> {
  const given = parseEndpoints(process.argv.slice(2));
  const server = given ? undefined : await EmbeddedEtcd.start();
  const endpoints = given ?? server!.endpoints;
  console.log(
    `etcdkit demo against ${given ? 'etcd at' : 'the embedded server at'} ${endpoints.join(', ')}\n`,
  );

  const etcd = new Etcd({ endpoints });
  const app = etcd.namespace(`demo/${process.pid}/`);
  try {
    const lease = await etcd.lease.grant(5, { keepAlive: true });
    await app.put('presence/demo', 'online', { lease });
    log('lease', `granted ${lease.id.toString(16)} (ttl ${lease.ttl}s), kept alive`);

    const watcher = app.watch({ key: 'counter' });
    const seen: string[] = [];
    watcher.on('put', (event) => seen.push(event.kv.text()));
    await watcher.ready();
    log('watcher', 'watching counter');

    const conflicts = await Promise.all(
      Array.from({ length: WORKERS }, async (_, i) => {
        let total = 0;
        for (let n = 0; n < INCREMENTS_PER_WORKER; n++) {
          total += await increment(app, 'counter', `worker-${i + 1}`);
        }
        return total;
      }),
    );

    const final = Number((await app.get('counter'))?.text());
    const expected = WORKERS * INCREMENTS_PER_WORKER;
    // The watcher sees every committed value exactly once, in order.
    while (seen.length < expected) await new Promise((resolve) => setTimeout(resolve, 10));
    await watcher.close();

    const keys = [];
    for await (const kv of app.scan({ all: true })) keys.push(kv.keyText());
    await lease.revoke();
    await app.delete({ all: true });

    const inOrder = seen.every((value, i) => value === String(i + 1));
    console.log('\nsummary');
    console.log(`  counter            ${final} (expected ${expected})`);
    console.log(`  conflicts retried  ${conflicts.reduce((a, b) => a + b, 0)}`);
    console.log(`  watch events       ${seen.length}, in order: ${inOrder}`);
    console.log(`  keys at the end    ${keys.join(', ')}`);
    if (final !== expected || !inOrder || seen.length !== expected) process.exitCode = 1;
  } finally {
    await etcd.close();
    await server?.stop();
  }
}

await main();
