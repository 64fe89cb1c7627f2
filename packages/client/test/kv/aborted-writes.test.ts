// A write aborted after it was sent may have been applied: it fails with OutcomeUnknownError, the
// abort as its cause, never with AbortedError, which says nothing was applied. A relay holds the
// server's answers, so the abort surely lands after the server took (and applied) the write. An
// abort before anything was sent stays AbortedError. Run on every transport (ETCDKIT_TEST_TRANSPORT).
import { createServer, type Socket, connect as tcpConnect } from 'node:net';
import { describeEachBackend, freePort } from '@etcdkit/testkit';
import { afterEach, expect, it } from 'vitest';
import { AbortedError, OutcomeUnknownError } from '../../src/errors.js';
import { Etcd } from '../../src/etcd.js';
import { cmp } from '../../src/kv/compare.js';
import { op } from '../../src/kv/op.js';
import { rejection } from './kv-support.js';

/** A TCP relay that forwards requests always, and answers only while it is not holding them. */
interface AnswerRelay {
  readonly endpoint: string;
  /** From now on the server's bytes wait in the relay. */
  hold(): void;
  /** Forwards what waited, and everything after. */
  release(): void;
  close(): Promise<void>;
}

async function startAnswerRelay(target: string): Promise<AnswerRelay> {
  const { hostname, port } = new URL(target);
  const sockets = new Set<Socket>();
  const held: Array<{ to: Socket; chunk: Buffer }> = [];
  let holding = false;
  const server = createServer((client) => {
    const upstream = tcpConnect({ host: hostname, port: Number(port) });
    for (const socket of [client, upstream]) {
      sockets.add(socket);
      socket.on('error', () => {});
      socket.on('close', () => {
        sockets.delete(socket);
        client.destroy();
        upstream.destroy();
      });
    }
    client.on('data', (chunk: Buffer) => upstream.write(chunk));
    upstream.on('data', (chunk: Buffer) => {
      if (holding) held.push({ to: client, chunk });
      else client.write(chunk);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('relay has no port');
  return {
    endpoint: `http://127.0.0.1:${address.port}`,
    hold() {
      holding = true;
    },
    release() {
      holding = false;
      for (const { to, chunk } of held.splice(0)) to.write(chunk);
    },
    async close() {
      const closed = new Promise<void>((resolve) => server.close(() => resolve()));
      for (const socket of sockets) socket.destroy();
      await closed;
    },
  };
}

describeEachBackend('a write aborted after it was sent', ({ backend, prefix }) => {
  let relay: AnswerRelay | undefined;
  const clients: Etcd[] = [];
  afterEach(async () => {
    relay?.release();
    await Promise.all(clients.splice(0).map((c) => c.close()));
    await relay?.close();
    relay = undefined;
  });

  /** A client through a relay whose connection is up, and a direct one to check the store. */
  async function relayed(): Promise<{ etcd: Etcd; direct: Etcd; relay: AnswerRelay }> {
    relay = await startAnswerRelay(backend().endpoints[0]!);
    const etcd = new Etcd({ endpoints: [relay.endpoint] });
    const direct = new Etcd({ endpoints: backend().endpoints });
    clients.push(etcd, direct);
    await etcd.get(`${prefix()}warm-up`);
    return { etcd, direct, relay };
  }

  /** Resolves once `key` holds `value` on the server: the held write was applied. */
  async function applied(direct: Etcd, key: string, value: string): Promise<void> {
    const deadline = Date.now() + 10_000;
    while ((await direct.get(key))?.text() !== value) {
      if (Date.now() > deadline) throw new Error(`${key} never became ${value}`);
      await new Promise((resolve) => setTimeout(resolve, 10));
    }
  }

  /** Asserts an OutcomeUnknownError caused by an AbortedError caused by `reason`. */
  function expectAbortedOutcomeUnknown(error: unknown, reason: unknown): void {
    expect(error).toBeInstanceOf(OutcomeUnknownError);
    expect(error).toMatchObject({
      code: 'OUTCOME_UNKNOWN',
      message: 'the write may or may not have been applied: the operation was aborted',
    });
    const cause = (error as Error).cause;
    expect(cause).toBeInstanceOf(AbortedError);
    expect((cause as Error).cause).toBe(reason);
  }

  it('a put the server applied, aborted before its answer, is OutcomeUnknownError', async () => {
    const { etcd, direct, relay } = await relayed();
    const key = `${prefix()}put`;
    relay.hold();
    const controller = new AbortController();
    const reason = new Error('gave up waiting');
    const put = rejection(etcd.put(key, 'v1', { signal: controller.signal }));
    await applied(direct, key, 'v1');
    controller.abort(reason);
    expectAbortedOutcomeUnknown(await put, reason);
  });

  it('a guarded txn aborted before its answer is OutcomeUnknownError, not retried', async () => {
    const { etcd, direct, relay } = await relayed();
    const key = `${prefix()}txn`;
    relay.hold();
    const controller = new AbortController();
    const reason = new Error('gave up waiting');
    const txn = rejection(
      etcd
        .txn()
        .if(cmp.missing(key))
        .then(op.put(key, 'created'))
        .commit({ retry: 'guarded', signal: controller.signal }),
    );
    await applied(direct, key, 'created');
    controller.abort(reason);
    expectAbortedOutcomeUnknown(await txn, reason);
    relay.release();
    expect((await direct.get(key))?.version).toBe(1n);
  });

  it('a read aborted before its answer is AbortedError', async () => {
    const { etcd, relay } = await relayed();
    relay.hold();
    const controller = new AbortController();
    const reason = new Error('gave up waiting');
    const read = rejection(etcd.get(`${prefix()}r`, { signal: controller.signal }));
    await new Promise((resolve) => setTimeout(resolve, 50));
    controller.abort(reason);
    const error = await read;
    expect(error).toBeInstanceOf(AbortedError);
    expect((error as Error).cause).toBe(reason);
  });

  it('a write aborted before it was sent is AbortedError, and nothing is applied', async () => {
    const direct = new Etcd({ endpoints: backend().endpoints });
    clients.push(direct);
    const key = `${prefix()}unsent`;
    const early = await rejection(direct.put(key, 'v', { signal: AbortSignal.abort('stop') }));
    expect(early).toBeInstanceOf(AbortedError);
    expect((early as Error).cause).toBe('stop');
    expect(await direct.get(key)).toBeUndefined();

    // Aborted while the client waits for a connection (nothing listens on the port).
    const nowhere = new Etcd({ endpoints: [`http://127.0.0.1:${await freePort()}`] });
    clients.push(nowhere);
    const controller = new AbortController();
    const waiting = rejection(nowhere.put(key, 'v', { signal: controller.signal }));
    await new Promise((resolve) => setTimeout(resolve, 50));
    controller.abort('stop');
    const late = await waiting;
    expect(late).toBeInstanceOf(AbortedError);
    expect((late as Error).cause).toBe('stop');
  });
});
