// The program of the release check (scripts/release-check.mjs), copied into a fresh project that
// installed the packed tarballs twice: as program.ts (an ES module: import) and as program.cts
// (CommonJS: require), compiled there with tsc (strict, nodenext, skipLibCheck false) against the
// .d.ts and .d.cts declarations, and both run. A lock, an STM transfer, an election, a watch and a
// lease on the embedded server (or on the etcd at the endpoint given as the one argument), each
// checked, then a recorded register history checked by @etcdkit/verify (and the same history with a
// stale read, which must not be linearizable); it prints one line naming the server when everything
// held, and fails with exit code 1 otherwise. No top-level await, so the same source is valid
// CommonJS. release-check runs it on each runtime it is given (Node, Bun, Deno).
import assert from 'node:assert/strict';
import { Etcd, InvalidConfigError } from '@etcdkit/client';
import { Election, Mutex, runStm, Session } from '@etcdkit/recipes';
import { EmbeddedEtcd } from '@etcdkit/server-embedded';
import {
  checkLinearizable,
  Recorder,
  RecordingRegister,
  type RegisterInput,
  type RegisterOperation,
  type RegisterOutput,
  registerModel,
} from '@etcdkit/verify';

/**
 * `cjs` when this file runs as CommonJS (program.cts, compiled to out/program.cjs), `esm` as an ES
 * module. Told by the file's name: Bun runs an ES module that mentions `module` as CommonJS.
 */
const format = process.argv[1]?.endsWith('.cjs') ? 'cjs' : 'esm';

async function main(): Promise<void> {
  const endpoint = process.argv[2];
  const server = endpoint === undefined ? await EmbeddedEtcd.start() : undefined;
  const endpoints = server === undefined ? [endpoint ?? ''] : [...server.endpoints];
  const etcd = new Etcd({ endpoints });
  try {
    // A real etcd may hold a previous run's keys.
    await etcd.delete({ prefix: 'accounts/' });
    const { version } = await etcd.maintenance.status();
    const watcher = etcd.watch({ prefix: 'accounts/' });
    await watcher.ready();

    const lease = await etcd.lease.grant(30);
    await etcd.put('accounts/alice', '100', { lease });
    await etcd.put('accounts/bob', '0');
    const ttl = await etcd.lease.timeToLive(lease.id, { keys: true });
    assert.deepEqual(
      ttl.keys.map((key) => Buffer.from(key).toString()),
      ['accounts/alice'],
    );

    const session = await Session.create(etcd, { ttl: 10 });
    const lock = await new Mutex(session, 'locks/accounts').lock({
      signal: AbortSignal.timeout(5_000),
    });
    const { value: moved } = await runStm(etcd, async (stm) => {
      const from = Number((await stm.get('accounts/alice')) ?? '0');
      const to = Number((await stm.get('accounts/bob')) ?? '0');
      stm.put('accounts/alice', String(from - 10), { lease: lease.id });
      stm.put('accounts/bob', String(to + 10));
      return 10;
    });
    assert.equal(moved, 10);
    await lock.unlock();

    const election = new Election(session, 'elections/scheduler');
    const leadership = await election.campaign('node-a', { signal: AbortSignal.timeout(5_000) });
    assert.equal((await election.leader()).text(), 'node-a');
    await leadership.resign();

    const seen: string[] = [];
    for await (const batch of watcher) {
      for (const event of batch.events)
        seen.push(`${event.type} ${event.kv.keyText()}=${event.kv.text()}`);
      if (seen.length >= 4) break;
    }
    assert.deepEqual(seen, [
      'put accounts/alice=100',
      'put accounts/bob=0',
      'put accounts/alice=90',
      'put accounts/bob=10',
    ]);

    await lease.revoke();
    assert.equal(await etcd.get('accounts/alice'), undefined);
    assert.equal((await etcd.get('accounts/bob'))?.text(), '10');
    await session.close();

    const recorder = new Recorder<RegisterInput, RegisterOutput>();
    const register = new RecordingRegister(etcd, recorder, 0);
    await register.put('register', 'v1');
    await register.cas('register', 'v1', 'v2');
    assert.equal((await register.get('register')).value, 'v2');
    const history = recorder.history();
    const recorded = checkLinearizable(registerModel(), history);
    assert.equal(recorded.valid, true);
    const read = history[2]!;
    const stale: RegisterOperation = {
      ...read,
      output: { type: 'get', value: 'v1', modRevision: 0n },
    };
    const forged = checkLinearizable(registerModel(), [history[0]!, history[1]!, stale]);
    assert.equal(forged.valid, false);
    assert.equal(forged.anomalies.length, 1);

    // @grpc/grpc-js is an optional peer dependency, not installed here: choosing its transport
    // fails where the client is made, saying what to install.
    assert.throws(
      () => new Etcd({ endpoints, transport: 'grpc-js' }),
      (error: unknown) =>
        error instanceof InvalidConfigError && error.message.includes('npm install @grpc/grpc-js'),
    );
    console.log(
      `${format} program on ${server === undefined ? 'etcd' : 'the embedded server'} ${version}: ` +
        'lock, stm transfer, election, watch, lease, a checked history and no grpc-js ok',
    );
  } finally {
    await etcd.close();
    await server?.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
