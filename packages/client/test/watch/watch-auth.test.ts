// Watch with auth on, on a real etcd and on the embedded server (each suite on a server of its own,
// with --auth-token-ttl=1): an expired token on resume is refreshed once, and a watch the user may
// not make fails typed after one refresh.
import { describeEachBackend, startTcpProxy } from '@etcdkit/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { type EtcdError, PermissionDeniedError } from '../../src/errors.js';
import { Etcd } from '../../src/etcd.js';
import {
  AUTH_BACKENDS,
  type AuthServer,
  enableAuth,
  ROOT_PASSWORD,
  startAuthServer,
} from '../auth-servers.js';
import { describeEvents, streamLog, takeEvents, waitFor } from './watch-support.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describeEachBackend(
  'watch with auth (--auth-token-ttl=1)',
  ({ name }) => {
    let server: AuthServer;

    beforeAll(async () => {
      server = await startAuthServer(name, { tokenTtlSeconds: 1 });
      await enableAuth(server.endpoint);
    });
    afterAll(async () => {
      await server?.stop();
    });

    it('an expired token on resume is refreshed once and the watcher resumes, losing nothing', async () => {
      const proxy = await startTcpProxy(server.endpoint);
      const auth = { username: 'root', password: ROOT_PASSWORD };
      const refreshes: string[] = [];
      const log = streamLog();
      const writer = new Etcd({ endpoints: [server.endpoint], auth });
      const watching = new Etcd({
        endpoints: [proxy.endpoint],
        auth,
        hooks: { onAuthRefresh: (event) => refreshes.push(event.reason) },
        watch: { hooks: log.hooks },
      });
      try {
        const watcher = watching.watch({ prefix: 'expiry/' });
        let resumed = 0;
        watcher.on('resumed', () => resumed++);
        const iterator = watcher[Symbol.asyncIterator]();
        await watcher.ready();
        const r1 = (await writer.put('expiry/a', '1')).header.revision;
        expect(describeEvents(await takeEvents(iterator, 1))).toEqual([`${r1} put expiry/a=1`]);
        // Unused for longer than its TTL, the watching client's token is forgotten by the server;
        // the watch re-created after the cut presents it. Twice the TTL (the server sweeps once a
        // second) and 2 s more for a loaded machine's late sweep: presenting the token to poll
        // would keep it alive.
        await sleep(4_000);
        const r2 = (await writer.put('expiry/a', '2')).header.revision;
        proxy.cutAll();
        await waitFor(() => resumed === 1, 20_000, 'the watcher to resume');
        const r3 = (await writer.put('expiry/a', '3')).header.revision;
        expect(describeEvents(await takeEvents(iterator, 2))).toEqual([
          `${r2} put expiry/a=2`,
          `${r3} put expiry/a=3`,
        ]);
        expect(refreshes[0]).toBe('initial');
        expect(refreshes).toContain('explicit');
        expect(log.reasons).toContain('auth');
        await watcher.close();
      } finally {
        await watching.close();
        await writer.close();
        await proxy.close();
      }
    }, 60_000);

    it('a watch the user may not make fails with PermissionDeniedError after one token refresh', async () => {
      const refreshes: string[] = [];
      const etcd = new Etcd({
        endpoints: [server.endpoint],
        auth: { username: 'nobody', password: 'nobody-secret' },
        hooks: { onAuthRefresh: (event) => refreshes.push(event.reason) },
      });
      try {
        const watcher = etcd.watch({ key: 'secret' });
        const errors: EtcdError[] = [];
        watcher.on('error', (error) => errors.push(error));
        const failure = await watcher.ready().catch((error: unknown) => error);
        expect(failure).toBeInstanceOf(PermissionDeniedError);
        expect(failure).toMatchObject({
          code: 'PERMISSION_DENIED',
          message: 'etcdserver: permission denied',
        });
        expect(errors).toEqual([failure]);
        expect(refreshes).toEqual(['initial', 'explicit']);
        expect(watcher.closed).toBe(true);
      } finally {
        await etcd.close();
      }
    });
  },
  { only: AUTH_BACKENDS },
);
