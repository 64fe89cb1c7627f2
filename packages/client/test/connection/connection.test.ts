// Connection and the default transport (or ETCDKIT_TEST_TRANSPORT's) against one real etcd member.

import { fileURLToPath } from 'node:url';
import { type EtcdProcess, runModuleScript, startEtcd } from '@etcdkit/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Connection } from '../../src/connection/connection.js';
import {
  AbortedError,
  ClientClosedError,
  DeadlineExceededError,
  EmptyKeyError,
  EtcdError,
  OutcomeUnknownError,
  UnimplementedError,
} from '../../src/errors.js';
import {
  etcdserverpb_KV,
  etcdserverpb_Maintenance,
  etcdserverpb_Watch,
} from '../../src/generated/methods.js';
import { selectTransport } from '../../src/transport/select.js';
import {
  type Channel,
  type ChannelCallOptions,
  GrpcStatus,
  type Metadata,
  type Transport,
} from '../../src/transport/types.js';

const bytes = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array | null | undefined) => new TextDecoder().decode(b ?? new Uint8Array());

/** The default transport (or ETCDKIT_TEST_TRANSPORT's), recording the metadata of every call. */
function recordingTransport(seen: Metadata[]): Transport {
  const inner = selectTransport(undefined);
  return {
    name: 'recording',
    open(options) {
      const channel = inner.open(options);
      const record = (o: ChannelCallOptions) => {
        seen.push(o.metadata ?? {});
        return o;
      };
      return {
        target: channel.target,
        state: () => channel.state(),
        ready: (deadline, signal) => channel.ready(deadline, signal),
        unary: (method, request, o) => channel.unary(method, request, record(o)),
        serverStream: (method, request, o) => channel.serverStream(method, request, record(o)),
        bidiStream: (method, o) => channel.bidiStream(method, record(o)),
        close: () => channel.close(),
      } satisfies Channel;
    },
  };
}

describe('Connection against a real etcd', () => {
  let etcd: EtcdProcess;
  let conn: Connection;

  beforeAll(async () => {
    etcd = await startEtcd();
    conn = new Connection({ endpoints: [etcd.endpoint] });
  });
  afterAll(async () => {
    await conn?.close();
    await etcd?.stop();
  });

  it('round-trips a put and a range, with bigint revisions and versions', async () => {
    const put = await conn.unary(
      etcdserverpb_KV.Put,
      { key: bytes('a'), value: bytes('1') },
      'write',
    );
    expect(typeof put.header?.revision).toBe('bigint');
    const range = await conn.unary(etcdserverpb_KV.Range, { key: bytes('a') }, 'read');
    expect(range.kvs).toHaveLength(1);
    expect(text(range.kvs[0]?.value)).toBe('1');
    expect(range.kvs[0]?.modRevision).toBe(put.header?.revision);
    expect(range.kvs[0]?.version).toBe(1n);
    // A revision beyond 2^53 survives the round trip (the server rejects it as a future revision).
    const huge = 2n ** 62n + 7n;
    await expect(
      conn.unary(etcdserverpb_KV.Range, { key: bytes('a'), revision: huge }, 'read'),
    ).rejects.toMatchObject({ code: 'FUTURE_REVISION' });
  });

  it('reports server errors typed, without retrying them', async () => {
    await expect(
      conn.unary(etcdserverpb_KV.Put, { key: new Uint8Array(), value: bytes('x') }, 'write'),
    ).rejects.toMatchObject({ code: 'EMPTY_KEY', message: EmptyKeyError.etcdMessage });
  });

  it('refuses a request over the send limit without sending it', async () => {
    const c = new Connection({ endpoints: [etcd.endpoint], maxCallSendMsgSize: 1024 });
    try {
      const error = await c
        .unary(etcdserverpb_KV.Put, { key: bytes('huge'), value: new Uint8Array(4096) }, 'write')
        .catch((e: unknown) => e);
      expect(error).toBeInstanceOf(EtcdError);
      expect((error as EtcdError).grpcStatus).toBe(GrpcStatus.ResourceExhausted);
      expect((error as EtcdError).cause).toMatchObject({ sent: false });
      const res = await conn.unary(etcdserverpb_KV.Range, { key: bytes('huge') }, 'read');
      expect(res.kvs).toHaveLength(0);
    } finally {
      await c.close();
    }
  });

  it('goes without a token when auth is configured but the server has auth off', async () => {
    const c = new Connection({
      endpoints: [etcd.endpoint],
      auth: { username: 'root', password: 'whatever' },
    });
    try {
      await c.unary(etcdserverpb_KV.Range, { key: bytes('a') }, 'read');
      expect((await c.metadata()).token).toBeUndefined();
    } finally {
      await c.close();
    }
  });

  it('reports a method the server lacks as UnimplementedError (server stream)', async () => {
    const stream = conn.serverStream(etcdserverpb_KV.RangeStream, { key: bytes('a') }, 'read');
    const error = await (async () => {
      for await (const _ of stream) {
        // nothing
      }
    })().catch((e: unknown) => e);
    expect(error).toBeInstanceOf(UnimplementedError);
  });

  it('streams a snapshot chunk by chunk (server stream)', async () => {
    const big = bytes('x'.repeat(64 * 1024));
    for (let i = 0; i < 16; i++) {
      await conn.unary(etcdserverpb_KV.Put, { key: bytes(`big/${i}`), value: big }, 'write');
    }
    let chunks = 0;
    let size = 0;
    for await (const part of conn.serverStream(etcdserverpb_Maintenance.Snapshot, {}, 'read')) {
      chunks++;
      size += part.blob.length;
      // A slow consumer: the stream must wait for us, not buffer the whole snapshot.
      if (chunks % 8 === 0) await new Promise((r) => setTimeout(r, 1));
    }
    expect(chunks).toBeGreaterThan(4);
    expect(size).toBeGreaterThan(1024 * 1024);
  });

  it('stops a server stream on break and on cancel()', async () => {
    let n = 0;
    for await (const _ of conn.serverStream(etcdserverpb_Maintenance.Snapshot, {}, 'read')) {
      if (++n === 2) break;
    }
    expect(n).toBe(2);
    const stream = conn.serverStream(etcdserverpb_Maintenance.Snapshot, {}, 'read');
    const it = stream[Symbol.asyncIterator]();
    await it.next();
    stream.cancel();
    await expect(drain(it)).rejects.toBeInstanceOf(AbortedError);
  });

  it('carries a watch over a bidi stream', async () => {
    const stream = await conn.bidiStream(etcdserverpb_Watch.Watch);
    stream.write({ createRequest: { key: bytes('w') } });
    const it = stream[Symbol.asyncIterator]();
    const created = await it.next();
    expect(created.value?.created).toBe(true);
    await conn.unary(etcdserverpb_KV.Put, { key: bytes('w'), value: bytes('v') }, 'write');
    const event = await it.next();
    expect(text(event.value?.events[0]?.kv?.value)).toBe('v');
    stream.cancel();
    await expect(it.next()).rejects.toBeInstanceOf(AbortedError);
    expect(() => stream.write({ createRequest: { key: bytes('x') } })).toThrow(AbortedError);
  });

  it('aborts a watch stream with the signal: AbortedError with the reason', async () => {
    const controller = new AbortController();
    const stream = await conn.bidiStream(etcdserverpb_Watch.Watch, { signal: controller.signal });
    stream.write({ createRequest: { key: bytes('w2') } });
    const it = stream[Symbol.asyncIterator]();
    await it.next();
    const pending = it.next();
    const reason = new Error('stop watching');
    controller.abort(reason);
    const error = await pending.catch((e: unknown) => e);
    expect(error).toBeInstanceOf(AbortedError);
    expect((error as Error).cause).toBe(reason);
  });

  it('sends hasleader on calls and streams with requireLeader', async () => {
    const seen: Metadata[] = [];
    const c = new Connection({
      endpoints: [etcd.endpoint],
      requireLeader: true,
      transport: recordingTransport(seen),
    });
    try {
      await c.unary(etcdserverpb_KV.Range, { key: bytes('a') }, 'read');
      const watch = await c.bidiStream(etcdserverpb_Watch.Watch);
      watch.write({ createRequest: { key: bytes('a') } });
      const first = await watch[Symbol.asyncIterator]().next();
      expect(first.value?.created).toBe(true);
      watch.cancel();
      for await (const _ of c.serverStream(etcdserverpb_Maintenance.Snapshot, {}, 'read')) break;
      expect(seen).toEqual([{ hasleader: 'true' }, { hasleader: 'true' }, { hasleader: 'true' }]);
    } finally {
      await c.close();
    }
  });

  it('close() leaves nothing behind: a process using the connection exits by itself', async () => {
    const connection = fileURLToPath(
      new URL('../../src/connection/connection.ts', import.meta.url),
    );
    const methods = fileURLToPath(new URL('../../src/generated/methods.ts', import.meta.url));
    const script = `
      import { Connection } from ${JSON.stringify(connection)};
      import { etcdserverpb_KV as KV, etcdserverpb_Watch as W, etcdserverpb_Maintenance as M }
        from ${JSON.stringify(methods)};
      const conn = new Connection({ endpoints: [process.env.ENDPOINT], requireLeader: true });
      await conn.unary(KV.Range, { key: new Uint8Array([1]) }, 'read');
      const watch = await conn.bidiStream(W.Watch);
      watch.write({ createRequest: { key: new Uint8Array([1]) } });
      const it = watch[Symbol.asyncIterator]();
      await it.next();
      const pending = it.next().catch((e) => e.code);
      for await (const _ of conn.serverStream(M.Snapshot, {}, 'read')) break;
      await conn.close();
      console.log('closed', await pending);
    `;
    const started = Date.now();
    const stdout = await runModuleScript(script, { env: { ENDPOINT: etcd.endpoint } });
    expect(stdout.trim()).toBe('closed CLIENT_CLOSED');
    expect(Date.now() - started).toBeLessThan(20_000);
  });

  describe('with the server frozen (SIGSTOP)', () => {
    it('aborts a hanging call: AbortedError whose cause is the reason', async () => {
      const c = new Connection({ endpoints: [etcd.endpoint] });
      await c.unary(etcdserverpb_KV.Range, { key: bytes('a') }, 'read');
      await etcd.pause();
      try {
        const controller = new AbortController();
        const reason = new Error('enough');
        const pending = c.unary(etcdserverpb_KV.Range, { key: bytes('a') }, 'read', {
          signal: controller.signal,
        });
        setTimeout(() => controller.abort(reason), 100);
        const error = await pending.catch((e: unknown) => e);
        expect(error).toBeInstanceOf(AbortedError);
        expect((error as Error).cause).toBe(reason);
      } finally {
        etcd.resume();
        await c.close();
      }
    });

    it('times out a read with DeadlineExceededError, a write with OutcomeUnknownError', async () => {
      const c = new Connection({ endpoints: [etcd.endpoint] });
      await c.unary(etcdserverpb_KV.Range, { key: bytes('a') }, 'read');
      await etcd.pause();
      try {
        const read = await c
          .unary(etcdserverpb_KV.Range, { key: bytes('a') }, 'read', { timeoutMs: 300 })
          .catch((e: unknown) => e);
        expect(read).toBeInstanceOf(DeadlineExceededError);
        const write = await c
          .unary(etcdserverpb_KV.Put, { key: bytes('t'), value: bytes('1') }, 'write', {
            timeoutMs: 300,
          })
          .catch((e: unknown) => e);
        expect(write).toBeInstanceOf(OutcomeUnknownError);
        expect((write as Error).cause).toBeInstanceOf(DeadlineExceededError);
      } finally {
        etcd.resume();
        await c.close();
      }
    });

    it('close() rejects the hanging call and later calls with ClientClosedError', async () => {
      const c = new Connection({ endpoints: [etcd.endpoint] });
      await c.unary(etcdserverpb_KV.Range, { key: bytes('a') }, 'read');
      const watch = await c.bidiStream(etcdserverpb_Watch.Watch);
      watch.write({ createRequest: { key: bytes('c') } });
      const watchIt = watch[Symbol.asyncIterator]();
      await watchIt.next();
      await etcd.pause();
      try {
        const pending = c.unary(etcdserverpb_KV.Range, { key: bytes('a') }, 'read');
        const pendingWatch = watchIt.next();
        await new Promise((r) => setTimeout(r, 50));
        await c.close();
        await expect(pending).rejects.toBeInstanceOf(ClientClosedError);
        await expect(pendingWatch).rejects.toBeInstanceOf(ClientClosedError);
        await expect(
          c.unary(etcdserverpb_KV.Range, { key: bytes('a') }, 'read'),
        ).rejects.toBeInstanceOf(ClientClosedError);
        await expect(c.bidiStream(etcdserverpb_Watch.Watch)).rejects.toBeInstanceOf(
          ClientClosedError,
        );
      } finally {
        etcd.resume();
      }
    });
  });
});

async function drain<T>(it: AsyncIterator<T>): Promise<void> {
  for (;;) {
    const r = await it.next();
    if (r.done) return;
  }
}
