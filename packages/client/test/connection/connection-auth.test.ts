// Username/password authentication through Connection, with auth on, against a real etcd and the
// embedded server (each suite on a server of its own).
import { describeEachBackend } from '@etcdkit/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { Connection } from '../../src/connection/connection.js';
import type { AuthRefreshEvent } from '../../src/connection/options.js';
import { AuthFailedError, EtcdError, UserEmptyError } from '../../src/errors.js';
import { etcdserverpb_KV, etcdserverpb_Watch } from '../../src/generated/methods.js';
import {
  AUTH_BACKENDS,
  type AuthServer,
  enableAuth,
  ROOT_PASSWORD,
  startAuthServer,
} from '../auth-servers.js';

const bytes = (s: string) => new TextEncoder().encode(s);
const text = (b: Uint8Array | null | undefined) => new TextDecoder().decode(b ?? new Uint8Array());

async function codeOf(promise: Promise<unknown>): Promise<string> {
  const error = await promise.then(
    () => 'no error',
    (e: unknown) => e,
  );
  return error instanceof EtcdError ? error.code : String(error);
}

describeEachBackend(
  'auth',
  ({ backend }) => {
    // The suite's own server (started fresh for it by the testkit), with auth turned on.
    const server = { endpoint: '' };

    beforeAll(async () => {
      server.endpoint = backend().endpoints[0]!;
      await enableAuth(server.endpoint);
    });

    it('without credentials, calls fail typed (etcd 3.4: "user name is empty")', async () => {
      const conn = new Connection({ endpoints: [server.endpoint] });
      try {
        const error = await conn
          .unary(etcdserverpb_KV.Put, { key: bytes('k'), value: bytes('v') }, 'write')
          .catch((e: unknown) => e);
        expect(error).toBeInstanceOf(EtcdError);
        expect((error as EtcdError).code).toBe('USER_EMPTY');
        expect((error as EtcdError).message).toBe(UserEmptyError.etcdMessage);
        expect(await codeOf(conn.unary(etcdserverpb_KV.Range, { key: bytes('k') }, 'read'))).toBe(
          'USER_EMPTY',
        );
      } finally {
        await conn.close();
      }
    });

    it('with a wrong password, the triggering call fails with AuthFailedError', async () => {
      const events: AuthRefreshEvent[] = [];
      const conn = new Connection({
        endpoints: [server.endpoint],
        auth: { username: 'root', password: 'wrong' },
        hooks: { onAuthRefresh: (e) => events.push(e) },
      });
      try {
        const error = await conn
          .unary(etcdserverpb_KV.Range, { key: bytes('k') }, 'read')
          .catch((e: unknown) => e);
        expect((error as EtcdError).code).toBe('AUTH_FAILED');
        expect((error as EtcdError).message).toBe(AuthFailedError.etcdMessage);
        expect(events.map((e) => [e.reason, e.error?.code])).toEqual([['initial', 'AUTH_FAILED']]);
      } finally {
        await conn.close();
      }
    });

    it('with the right password, works on unary calls and on a watch stream', async () => {
      const events: AuthRefreshEvent[] = [];
      const conn = new Connection({
        endpoints: [server.endpoint],
        auth: { username: 'root', password: ROOT_PASSWORD },
        hooks: { onAuthRefresh: (e) => events.push(e) },
      });
      try {
        // Concurrent first calls share one Authenticate.
        await Promise.all(
          [1, 2, 3, 4].map((i) =>
            conn.unary(etcdserverpb_KV.Put, { key: bytes(`a/${i}`), value: bytes('v') }, 'write'),
          ),
        );
        expect(events).toEqual([{ reason: 'initial' }]);
        const watch = await conn.bidiStream(etcdserverpb_Watch.Watch);
        watch.write({ createRequest: { key: bytes('a/w') } });
        const it = watch[Symbol.asyncIterator]();
        const created = await it.next();
        expect(created.value?.created).toBe(true);
        expect(created.value?.canceled).toBe(false);
        await conn.unary(etcdserverpb_KV.Put, { key: bytes('a/w'), value: bytes('seen') }, 'write');
        expect(text((await it.next()).value?.events[0]?.kv?.value)).toBe('seen');
        watch.cancel();
        expect((await conn.metadata()).token).toMatch(/\S/);
      } finally {
        await conn.close();
      }
    });

    it('reports a user without permission as PermissionDenied, not retried', async () => {
      let retries = 0;
      const conn = new Connection({
        endpoints: [server.endpoint],
        auth: { username: 'nobody', password: 'nobody-secret' },
        hooks: { onRetry: () => retries++ },
      });
      try {
        expect(
          await codeOf(
            conn.unary(etcdserverpb_KV.Put, { key: bytes('p'), value: bytes('v') }, 'write'),
          ),
        ).toBe('PERMISSION_DENIED');
        expect(retries).toBe(0);
      } finally {
        await conn.close();
      }
    });

    it('refreshToken() obtains a new token that works', async () => {
      const events: string[] = [];
      const conn = new Connection({
        endpoints: [server.endpoint],
        auth: { username: 'root', password: ROOT_PASSWORD },
        hooks: { onAuthRefresh: (e) => events.push(e.reason) },
      });
      try {
        const before = (await conn.metadata()).token;
        await conn.refreshToken();
        const after = (await conn.metadata()).token;
        expect(after).not.toBe(before);
        await conn.unary(etcdserverpb_KV.Range, { key: bytes('a/1') }, 'read');
        expect(events).toEqual(['initial', 'explicit']);
      } finally {
        await conn.close();
      }
    });
  },
  { only: AUTH_BACKENDS },
);

describeEachBackend(
  'auth with expiring tokens (--auth-token-ttl=1)',
  ({ name }) => {
    let server: AuthServer;

    beforeAll(async () => {
      server = await startAuthServer(name, { tokenTtlSeconds: 1 });
      await enableAuth(server.endpoint);
    });
    afterAll(async () => {
      await server?.stop();
    });

    it('re-authenticates once when the server forgot the token; the write applies once', async () => {
      const events: string[] = [];
      const conn = new Connection({
        endpoints: [server.endpoint],
        auth: { username: 'root', password: ROOT_PASSWORD },
        hooks: { onAuthRefresh: (e) => events.push(e.reason) },
      });
      try {
        await conn.unary(etcdserverpb_KV.Range, { key: bytes('x') }, 'read');
        // A simple token expires once unused for the TTL; keep idle past it, then write.
        let puts = 0;
        const deadline = Date.now() + 20_000;
        while (!events.includes('invalid-token') && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 1_500));
          await conn.unary(etcdserverpb_KV.Put, { key: bytes('ttl'), value: bytes('v') }, 'write');
          puts++;
        }
        expect(events[0]).toBe('initial');
        expect(events).toContain('invalid-token');
        // Every put applied exactly once: version == number of successful puts.
        const res = await conn.unary(etcdserverpb_KV.Range, { key: bytes('ttl') }, 'read');
        expect(res.kvs[0]?.version).toBe(BigInt(puts));
      } finally {
        await conn.close();
      }
    }, 40_000);
  },
  { only: AUTH_BACKENDS },
);
