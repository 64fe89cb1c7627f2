// A unary call made with the caller's AbortSignal, on every transport: the signal reaches the
// transport as it is (one listener while the call runs, none after, no AbortController made to link
// it with the client's closing signal), and the call still stops with AbortedError when the caller
// aborts and with ClientClosedError when the client closes.
import { abortRegistrations, type EtcdProcess, startEtcd } from '@etcdkit/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Connection } from '../../src/connection/connection.js';
import { AbortedError, ClientClosedError } from '../../src/errors.js';
import { etcdserverpb_KV } from '../../src/generated/methods.js';
import { GrpcJsTransport } from '../../src/transport/grpc-js.js';
import { H2Transport } from '../../src/transport/h2.js';
import { Http2Transport } from '../../src/transport/http2.js';
import type { Transport } from '../../src/transport/types.js';

const bytes = (s: string) => new TextEncoder().encode(s);
const TRANSPORTS: ReadonlyArray<readonly [string, Transport]> = [
  ['grpc-js', new GrpcJsTransport()],
  ['http2', new Http2Transport()],
  ['h2', new H2Transport()],
];

/** Runs `act` with AbortController counting how many are made; returns the count and the result. */
async function controllersMade<T>(act: () => Promise<T>): Promise<[number, T]> {
  const Original = globalThis.AbortController;
  let made = 0;
  globalThis.AbortController = class extends Original {
    constructor() {
      super();
      made++;
    }
  };
  try {
    const result = await act();
    return [made, result];
  } finally {
    globalThis.AbortController = Original;
  }
}

describe.each(TRANSPORTS)(
  "a unary call with the caller's signal, transport %s",
  (_name, transport) => {
    let etcd: EtcdProcess;

    beforeAll(async () => {
      etcd = await startEtcd();
    });
    afterAll(async () => {
      await etcd?.stop();
    });

    it('makes no AbortController and leaves nothing on the signal once it ends', async () => {
      const conn = new Connection({ endpoints: [etcd.endpoint], transport });
      try {
        await conn.unary(etcdserverpb_KV.Put, { key: bytes('s'), value: bytes('1') }, 'write');
        const caller = new AbortController();
        let during = -1;
        const [made, res] = await controllersMade(() => {
          const pending = conn.unary(etcdserverpb_KV.Range, { key: bytes('s') }, 'read', {
            signal: caller.signal,
          });
          during = abortRegistrations(caller.signal);
          return pending;
        });
        expect(new TextDecoder().decode(res.kvs[0]?.value ?? undefined)).toBe('1');
        expect([made, during, abortRegistrations(caller.signal)]).toEqual([0, 1, 0]);
      } finally {
        await conn.close();
      }
    });

    it("fails with AbortedError carrying the caller's reason when the caller aborts", async () => {
      const conn = new Connection({ endpoints: [etcd.endpoint], transport });
      try {
        await conn.unary(etcdserverpb_KV.Range, { key: bytes('s') }, 'read');
        await etcd.pause();
        const caller = new AbortController();
        const reason = new Error('no longer needed');
        const pending = conn
          .unary(etcdserverpb_KV.Range, { key: bytes('s') }, 'read', { signal: caller.signal })
          .catch((e: unknown) => e);
        await new Promise((resolve) => setTimeout(resolve, 20));
        caller.abort(reason);
        const error = await pending;
        expect(error).toBeInstanceOf(AbortedError);
        expect((error as AbortedError).cause).toBe(reason);
        expect(abortRegistrations(caller.signal)).toBe(0);
      } finally {
        etcd.resume();
        await conn.close();
      }
    });

    it("fails with ClientClosedError when the client closes, and leaves nothing on the caller's signal", async () => {
      const conn = new Connection({ endpoints: [etcd.endpoint], transport });
      await conn.unary(etcdserverpb_KV.Range, { key: bytes('s') }, 'read');
      await etcd.pause();
      const caller = new AbortController();
      try {
        const pending = conn
          .unary(etcdserverpb_KV.Range, { key: bytes('s') }, 'read', { signal: caller.signal })
          .catch((e: unknown) => e);
        await new Promise((resolve) => setTimeout(resolve, 20));
        await conn.close();
        expect(await pending).toBeInstanceOf(ClientClosedError);
        expect(abortRegistrations(caller.signal)).toBe(0);
        expect(caller.signal.aborted).toBe(false);
      } finally {
        etcd.resume();
      }
    });

    it('a write aborted by its caller after it was sent fails with OutcomeUnknownError over AbortedError', async () => {
      const conn = new Connection({ endpoints: [etcd.endpoint], transport });
      try {
        await conn.unary(etcdserverpb_KV.Range, { key: bytes('s') }, 'read');
        await etcd.pause();
        const caller = new AbortController();
        const pending = conn
          .unary(etcdserverpb_KV.Put, { key: bytes('s'), value: bytes('2') }, 'write', {
            signal: caller.signal,
          })
          .catch((e: unknown) => e);
        await new Promise((resolve) => setTimeout(resolve, 20));
        caller.abort(new Error('gave up'));
        const error = (await pending) as Error;
        expect(error.name).toBe('OutcomeUnknownError');
        expect(error.cause).toBeInstanceOf(AbortedError);
      } finally {
        etcd.resume();
        await conn.close();
      }
    });
  },
);
