// Simple tokens live until unused for the token TTL (`--auth-token-ttl`, `authTokenTtlSeconds`):
// every call presenting one starts its time again. A watch stream keeps the token it was opened
// with, so once that token is forgotten its watches go on but new creates are refused. The first
// suite runs in real time on both backends; the second uses the embedded server's virtual clock.
import { etcdserverpb_KV as KV, etcdserverpb_Lease as Lease } from '@etcdkit/client/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import { EmbeddedEtcd, type VirtualClock } from '../../src/index.js';
import { b, text } from '../support/bytes.js';
import {
  AuthClient,
  describeAuth,
  Errors,
  failure,
  READWRITE,
  ROOT_PASSWORD,
  setUpAuth,
} from './auth-support.js';

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));
const INVALID_TOKEN = 'rpc error: code = Unauthenticated desc = etcdserver: invalid auth token';

describeAuth('token TTL (1-2 s, real time)', ({ fresh }) => {
  it('an unused token is forgotten after the TTL; one presented meanwhile lives on', async () => {
    // 2 s: the token presented every 250 ms must never go unused for a TTL, which a loaded run
    // stalling a call for a second did to a 1 s one (etcd 3.5, load 25).
    const { client } = await fresh({ tokenTtlSeconds: 2 });
    const { root } = await setUpAuth(client);
    const idle = await client.token('root', ROOT_PASSWORD);
    // etcd sweeps tokens once a second, so a token is gone within the TTL and a second; 2 s more
    // for a loaded machine's late sweep. (Presenting the idle token to poll would keep it alive.)
    for (let elapsed = 0; elapsed < 5_000; elapsed += 250) {
      await sleep(250);
      await client.unary(KV.Range, { key: b('k') }, root);
    }
    expect(await failure(client.unary(KV.Range, { key: b('k') }, idle))).toEqual(
      Errors.invalidToken,
    );
    await client.unary(KV.Range, { key: b('k') }, root);
  });

  it('a watch stream outlives its token: its watches go on, new creates are refused', async () => {
    const { client } = await fresh({ tokenTtlSeconds: 1 });
    await setUpAuth(client);
    const watching = await client.token('root', ROOT_PASSWORD);
    const stream = client.watch(watching);
    try {
      stream.write({ createRequest: { key: b('w') } });
      await stream.take(1);
      // Twice the TTL (the sweep runs once a second) and 2 s more for a loaded machine's late
      // sweep: the token cannot be polled, presenting it would keep it alive.
      await sleep(4_000);
      const writer = await client.token('root', ROOT_PASSWORD);
      await client.unary(KV.Put, { key: b('w'), value: b('after') }, writer);
      const [, event] = await stream.take(2);
      expect(text(event?.events[0]?.kv?.value)).toBe('after');
      stream.write({ createRequest: { key: b('other') } });
      const [, , refused] = await stream.take(3);
      expect([
        refused?.watchId,
        refused?.created,
        refused?.canceled,
        refused?.cancelReason,
      ]).toEqual([-1n, true, true, INVALID_TOKEN]);
    } finally {
      stream.close();
    }
  });
});

describe('auth tokens on the embedded server (virtual time)', () => {
  let server: (EmbeddedEtcd & { readonly clock: VirtualClock }) | undefined;
  let client: AuthClient | undefined;
  afterEach(async () => {
    client?.close();
    await server?.stop();
  });

  async function start(ttlSeconds: number) {
    server = await EmbeddedEtcd.start({ clock: 'virtual', authTokenTtlSeconds: ttlSeconds });
    client = new AuthClient(server.endpoint);
    return {
      server,
      client,
      tokens: await setUpAuth(client, { alice: [{ type: READWRITE, key: 'k' }] }),
    };
  }

  it('a token lives exactly its TTL after it was last presented, on the server clock', async () => {
    const { server, client, tokens } = await start(10);
    const read = () => client.unary(KV.Range, { key: b('k') }, tokens.alice);
    await server.clock.advance(10_000);
    await read();
    await server.clock.advance(9_999);
    await read();
    await server.clock.advance(10_000);
    await read();
    await server.clock.advance(10_001);
    expect(await failure(read())).toEqual(Errors.invalidToken);
    // root's token, unused all along, went long ago; a new one works.
    expect(await failure(client.unary(KV.Range, { key: b('k') }, tokens.root))).toEqual(
      Errors.invalidToken,
    );
    await client.unary(KV.Range, { key: b('k') }, await client.token('root', ROOT_PASSWORD));
  });

  it('a keep-alive stream whose token expired ends with "invalid auth token"', async () => {
    const { server, client, tokens } = await start(10);
    const { ID } = await client.unary(Lease.LeaseGrant, { TTL: 60n }, tokens.alice);
    const stream = client.bidi(Lease.LeaseKeepAlive, tokens.alice);
    try {
      stream.write({ ID });
      expect((await stream.take(1))[0]?.TTL).toBe(60n);
      await server.clock.advance(10_001);
      stream.write({ ID });
      expect(await stream.end()).toEqual(Errors.invalidToken);
    } finally {
      stream.close();
    }
  });

  it('a restart forgets every token and keeps users, roles and auth on', async () => {
    const { server, tokens } = await start(300);
    await server.restart();
    // The old connection is gone with the restart.
    client?.close();
    client = new AuthClient(server.endpoint);
    expect(await failure(client.unary(KV.Range, { key: b('k') }, tokens.alice))).toEqual(
      Errors.invalidToken,
    );
    const fresh = await client.token('alice', 'alice-secret');
    await client.unary(KV.Put, { key: b('k'), value: b('v') }, fresh);
    expect(await failure(client.unary(KV.Put, { key: b('x'), value: b('v') }, fresh))).toEqual(
      Errors.permissionDenied,
    );
    expect(server.auth.enabled).toBe(true);
  });

  it('an unknown token never slows a call down (etcd would wait for a future index)', async () => {
    const { client } = await start(300);
    expect(
      await failure(client.unary(KV.Range, { key: b('k') }, 'abcdefghijklmnop.999999')),
    ).toEqual(Errors.invalidToken);
  });
});
