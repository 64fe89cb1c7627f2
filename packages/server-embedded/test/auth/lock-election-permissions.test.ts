// Lock and Election with auth on. etcd runs them on its in-process client with the caller's call
// context, so every request they make is checked as the caller's (and refused with status Unknown,
// like every error of these services). The cleanup of a cancelled wait differs: etcd runs it on a
// context without the caller's token, which auth refuses, so the key stays until its lease ends;
// the embedded server undoes it as the server itself. Both backends.
import {
  v3electionpb_Election as Election,
  etcdserverpb_KV as KV,
  etcdserverpb_Lease as Lease,
  v3lockpb_Lock as Lock,
  type MethodDescriptor,
} from '@etcdkit/client/protocol';
import * as grpc from '@grpc/grpc-js';
import { expect, it } from 'vitest';
import { b, text } from '../support/bytes.js';
import {
  type AuthTestServer,
  describeAuth,
  failure,
  READ,
  READWRITE,
  setUpAuth,
} from './auth-support.js';

const UNKNOWN = 2;
const permissionDenied = { code: UNKNOWN, details: 'etcdserver: permission denied' };
const userEmpty = { code: UNKNOWN, details: 'etcdserver: user name is empty' };

/** A unary call with `token` that the test can cancel, as a client that goes away. */
function cancellable<Req, Res>(
  server: AuthTestServer,
  method: MethodDescriptor<Req, Res>,
  request: Req,
  token: string,
) {
  const client = new grpc.Client(
    server.endpoint.replace(/^https?:\/\//, ''),
    grpc.credentials.createInsecure(),
  );
  const metadata = new grpc.Metadata();
  metadata.set('token', token);
  let call: grpc.ClientUnaryCall | undefined;
  const response = new Promise<Res>((resolve, reject) => {
    call = client.makeUnaryRequest(
      method.path,
      (message: Req) => Buffer.from(method.request.encode(message).finish()),
      (bytes: Buffer) => method.response.decode(bytes),
      request,
      metadata,
      (error, value) => (error ? reject(error) : resolve(value as Res)),
    );
  });
  response.catch(() => {});
  return {
    response,
    cancel: () => call?.cancel(),
    close: () => client.close(),
  };
}

describeAuth('Lock and Election permissions', ({ fresh }) => {
  it('Lock and Campaign are checked as the caller: no user, no permission, or granted', async () => {
    const server = await fresh();
    const { client } = server;
    const { root, alice, bob } = await setUpAuth(client, {
      alice: [{ type: READWRITE, key: 'p/', end: 'p0' }],
      bob: [{ type: READ, key: 'p/', end: 'p0' }],
    });
    const { ID: lease } = await client.unary(Lease.LeaseGrant, { TTL: 60n }, root);
    const keys = async () =>
      (await client.unary(KV.Range, { key: b('p/'), rangeEnd: b('p0') }, root)).kvs.map((kv) =>
        text(kv.key),
      );

    expect(await failure(client.unary(Lock.Lock, { name: b('p/l'), lease }))).toEqual(userEmpty);
    expect(await failure(client.unary(Lock.Lock, { name: b('q/l'), lease }, alice))).toEqual(
      permissionDenied,
    );
    expect(await failure(client.unary(Lock.Lock, { name: b('p/l'), lease }, bob))).toEqual(
      permissionDenied,
    );
    expect(await keys()).toEqual([]);
    const held = await client.unary(Lock.Lock, { name: b('p/l'), lease }, alice);
    expect(text(held.key)).toBe(`p/l/${lease.toString(16)}`);
    expect(await failure(client.unary(Lock.Unlock, { key: held.key }, bob))).toEqual(
      permissionDenied,
    );
    await client.unary(Lock.Unlock, { key: held.key }, alice);

    const campaign = { name: b('p/e'), lease, value: b('v') };
    expect(await failure(client.unary(Election.Campaign, campaign, bob))).toEqual(permissionDenied);
    const elected = await client.unary(Election.Campaign, campaign, alice);
    expect(text((await client.unary(Election.Leader, { name: b('p/e') }, bob)).kv?.value)).toBe(
      'v',
    );
    expect(await failure(client.unary(Election.Leader, { name: b('p/e') }))).toEqual(userEmpty);
    expect(
      await failure(
        client.unary(Election.Proclaim, { leader: elected.leader, value: b('w') }, bob),
      ),
    ).toEqual(permissionDenied);
    await client.unary(Election.Resign, { leader: elected.leader }, alice);
    expect(await keys()).toEqual([]);
  });

  it("a cancelled wait's key: etcd cannot delete it (no token on its cleanup), the embedded server does", async () => {
    const server = await fresh();
    const { client } = server;
    const { root, alice } = await setUpAuth(client, {
      alice: [{ type: READWRITE, key: 'p/', end: 'p0' }],
    });
    const { ID: first } = await client.unary(Lease.LeaseGrant, { TTL: 60n }, root);
    const { ID: second } = await client.unary(Lease.LeaseGrant, { TTL: 60n }, root);
    const keys = async () =>
      (await client.unary(KV.Range, { key: b('p/l/'), rangeEnd: b('p/l0') }, root)).kvs.length;
    await client.unary(Lock.Lock, { name: b('p/l'), lease: first }, alice);
    const waiting = cancellable(server, Lock.Lock, { name: b('p/l'), lease: second }, alice);
    try {
      // Polled up to a deadline, not a count of tries: a loaded run answers slowly.
      const until = async (done: (count: number) => boolean) => {
        const deadline = Date.now() + 10_000;
        while (!done(await keys()) && Date.now() < deadline) {
          await new Promise((r) => setTimeout(r, 20));
        }
      };
      await until((count) => count >= 2);
      expect(await keys()).toBe(2);
      waiting.cancel();
      // The embedded server deletes the cancelled waiter's key (waited for); etcd keeps it (given
      // half a second to show it would not).
      if (server.backend === 'embedded') await until((count) => count < 2);
      else await new Promise((r) => setTimeout(r, 500));
      expect(await keys()).toBe(server.backend === 'embedded' ? 1 : 2);
    } finally {
      waiting.close();
    }
  });
});
