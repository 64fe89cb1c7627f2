// v3lockpb.Lock and v3electionpb.Election over gRPC, exactly as etcd answers them, on the embedded
// server or (ETCDKIT_SERVER_SPEC_BACKEND=etcd) a real etcd: every error is status Unknown with
// Go's message, lease 0 means a fresh 60 s lease, a cancelled wait removes its key, and the
// headers are those of the requests etcd's recipes make.
import {
  v3electionpb_Election as Election,
  etcdserverpb_KV as KV,
  etcdserverpb_Lease as Lease,
  v3lockpb_Lock as Lock,
  type MethodDescriptor,
} from '@etcdkit/client/protocol';
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, beforeEach, describe, expect, it } from 'vitest';
import { b, text } from '../support/bytes.js';
import { status } from '../support/grpc-client.js';
import { specBackend, startTestServer, type TestServer } from '../support/test-server.js';

const UNKNOWN = 2;
const CANCELLED = 1;

describe(`Lock and Election [${specBackend}]`, () => {
  let server: TestServer;
  let raw: grpc.Client;
  let test = 0;
  let name = '';

  /** A unary call that can be cancelled, as a client that goes away does. */
  function call<Req, Res>(method: MethodDescriptor<Req, Res>, request: Req) {
    let handle: grpc.ClientUnaryCall | undefined;
    const response = new Promise<Res>((resolve, reject) => {
      handle = raw.makeUnaryRequest(
        method.path,
        (message: Req) => Buffer.from(method.request.encode(message).finish()),
        (bytes: Buffer) => method.response.decode(bytes),
        request,
        (error, value) => (error ? reject(error) : resolve(value as Res)),
      );
    });
    response.catch(() => {});
    return { response, cancel: () => handle?.cancel() };
  }

  const unary = <Req, Res>(method: MethodDescriptor<Req, Res>, request: Req) =>
    server.client.unary(method, request);
  const grant = async (ttl = 30) => (await unary(Lease.LeaseGrant, { TTL: BigInt(ttl) })).ID;
  const hex = (lease: bigint) => lease.toString(16);
  const revision = async () =>
    (await unary(KV.Range, { key: b('none'), countOnly: true })).header?.revision ?? 0n;
  /** Keys under `name/`, oldest first. */
  const queue = async () =>
    (
      await unary(KV.Range, {
        key: b(`${name}/`),
        rangeEnd: b(`${name}0`),
        sortOrder: 1,
        sortTarget: 2,
      })
    ).kvs.map((kv) => text(kv.key));
  const eventually = async (check: () => Promise<boolean>) => {
    for (let i = 0; i < 250 && !(await check()); i++) await new Promise((r) => setTimeout(r, 20));
    expect(await check()).toBe(true);
  };

  beforeAll(async () => {
    server = await startTestServer();
    raw = new grpc.Client(
      server.endpoint.replace(/^https?:\/\//, ''),
      grpc.credentials.createInsecure(),
    );
  });
  afterAll(async () => {
    raw?.close();
    await server?.stop();
  });
  beforeEach(() => {
    name = `t${++test}`;
  });

  describe('Lock', () => {
    it('answers the key name/<lease hex> and the header of the txn that created it', async () => {
      const lease = await grant();
      const before = await revision();
      const response = await unary(Lock.Lock, { name: b(name), lease });
      expect(text(response.key)).toBe(`${name}/${hex(lease)}`);
      expect(response.header?.revision).toBe(before + 1n);
      const kv = (await unary(KV.Range, { key: response.key })).kvs[0];
      expect(kv).toMatchObject({ createRevision: before + 1n, lease, version: 1n });
      expect(kv?.value).toHaveLength(0);
    });

    it('with lease 0 grants a 60 s lease for the key', async () => {
      const response = await unary(Lock.Lock, { name: b(name) });
      const lease = (await unary(KV.Range, { key: response.key })).kvs[0]?.lease ?? 0n;
      expect(text(response.key)).toBe(`${name}/${hex(lease)}`);
      expect((await unary(Lease.LeaseTimeToLive, { ID: lease })).grantedTTL).toBe(60n);
      await unary(Lease.LeaseRevoke, { ID: lease });
    });

    it('answers a waiter, once the holder unlocked, with the header of that moment', async () => {
      const [first, second] = [await grant(), await grant()];
      const held = await unary(Lock.Lock, { name: b(name), lease: first });
      const waiting = call(Lock.Lock, { name: b(name), lease: second });
      await eventually(async () => (await queue()).length === 2);
      const unlocked = await unary(Lock.Unlock, { key: held.key });
      const granted = await waiting.response;
      expect(text(granted.key)).toBe(`${name}/${hex(second)}`);
      expect(granted.header?.revision).toBe(unlocked.header?.revision);
    });

    it('deletes the key of a waiter whose call is cancelled', async () => {
      const [first, second] = [await grant(), await grant()];
      await unary(Lock.Lock, { name: b(name), lease: first });
      const waiting = call(Lock.Lock, { name: b(name), lease: second });
      await eventually(async () => (await queue()).length === 2);
      waiting.cancel();
      await expect(waiting.response).rejects.toMatchObject({ code: CANCELLED });
      await eventually(async () => (await queue()).length === 1);
      expect(await queue()).toEqual([`${name}/${hex(first)}`]);
    });

    it('sends errors as Unknown with the message: unknown lease, empty unlock key', async () => {
      await expect(unary(Lock.Lock, { name: b(name), lease: 0x7ffffffn })).rejects.toMatchObject(
        status(UNKNOWN, 'etcdserver: requested lease not found'),
      );
      await expect(unary(Lock.Unlock, { key: b('') })).rejects.toMatchObject(
        status(UNKNOWN, 'etcdserver: key is not provided'),
      );
    });

    it('unlocks a missing key without error or revision', async () => {
      const before = await revision();
      const response = await unary(Lock.Unlock, { key: b(`${name}/none`) });
      expect(response.header?.revision).toBe(before);
    });
  });

  describe('Election', () => {
    it('Campaign answers the LeaderKey and the header of its first txn, even after waiting', async () => {
      const [first, second] = [await grant(), await grant()];
      const one = await unary(Election.Campaign, { name: b(name), lease: first, value: b('1') });
      expect(one.leader).toMatchObject({ rev: one.header?.revision, lease: first });
      expect(text(one.leader?.name)).toBe(name);
      expect(text(one.leader?.key)).toBe(`${name}/${hex(first)}`);
      const waiting = call(Election.Campaign, { name: b(name), lease: second, value: b('2') });
      await eventually(async () => (await queue()).length === 2);
      await unary(Election.Resign, { leader: one.leader });
      const two = await waiting.response;
      expect(two.header?.revision).toBe(two.leader?.rev);
    });

    it('Campaign again with a new value proclaims it but answers the first txn header', async () => {
      const lease = await grant();
      const one = await unary(Election.Campaign, { name: b(name), lease, value: b('a') });
      const again = await unary(Election.Campaign, { name: b(name), lease, value: b('b') });
      expect(again.header?.revision).toBe(one.header?.revision);
      expect(again.leader).toEqual(one.leader);
      const current = await unary(Election.Leader, { name: b(name) });
      expect(current.kv).toMatchObject({ version: 2n, modRevision: (one.leader?.rev ?? 0n) + 1n });
      expect(current.header?.revision).toBe((one.leader?.rev ?? 0n) + 1n);
    });

    it('sends "election: no leader", "election: not leader" and a missing LeaderKey as Unknown', async () => {
      await expect(unary(Election.Leader, { name: b(name) })).rejects.toMatchObject(
        status(UNKNOWN, 'election: no leader'),
      );
      const stale = { name: b(name), key: b(`${name}/1`), rev: 5n, lease: await grant() };
      await expect(
        unary(Election.Proclaim, { leader: stale, value: b('x') }),
      ).rejects.toMatchObject(status(UNKNOWN, 'election: not leader'));
      for (const method of [Election.Proclaim, Election.Resign]) {
        await expect(unary(method, {})).rejects.toMatchObject(
          status(UNKNOWN, '"leader" field must be provided'),
        );
      }
    });

    it('Resign with a stale LeaderKey succeeds without a revision', async () => {
      const before = await revision();
      const stale = { name: b(name), key: b(`${name}/1`), rev: 5n, lease: await grant() };
      expect((await unary(Election.Resign, { leader: stale })).header?.revision).toBe(before);
    });

    it('Proclaim with lease 0 moves the leader key onto a fresh 60 s lease, as etcd does', async () => {
      const lease = await grant();
      const one = await unary(Election.Campaign, { name: b(name), lease, value: b('a') });
      await unary(Election.Proclaim, { leader: { ...one.leader, lease: 0n }, value: b('b') });
      const kv = (await unary(Election.Leader, { name: b(name) })).kv;
      expect(kv?.lease).not.toBe(lease);
      expect((await unary(Lease.LeaseTimeToLive, { ID: kv?.lease ?? 0n })).grantedTTL).toBe(60n);
      await unary(Lease.LeaseRevoke, { ID: kv?.lease ?? 0n });
    });

    it('withdraws the key of a campaign whose call is cancelled', async () => {
      const [first, second] = [await grant(), await grant()];
      await unary(Election.Campaign, { name: b(name), lease: first, value: b('1') });
      const waiting = call(Election.Campaign, { name: b(name), lease: second, value: b('2') });
      await eventually(async () => (await queue()).length === 2);
      waiting.cancel();
      await eventually(async () => (await queue()).length === 1);
      expect(await queue()).toEqual([`${name}/${hex(first)}`]);
    });

    it('Observe sends the first put into an empty election with its own revision, then proclaims', async () => {
      const stream = server.client.openServerStream(Election.Observe, { name: b(name) });
      const seen: { value: string; revision: bigint }[] = [];
      stream.on(
        'data',
        (message: { kv?: { value?: Uint8Array }; header?: { revision?: bigint } }) =>
          seen.push({ value: text(message.kv?.value), revision: message.header?.revision ?? 0n }),
      );
      stream.on('error', () => {});
      try {
        await new Promise((r) => setTimeout(r, 200));
        const one = await unary(Election.Campaign, {
          name: b(name),
          lease: await grant(),
          value: b('1'),
        });
        await eventually(async () => seen.length === 1);
        const proclaimed = await unary(Election.Proclaim, { leader: one.leader, value: b('2') });
        await eventually(async () => seen.length === 2);
        expect(seen).toEqual([
          { value: '1', revision: one.leader?.rev ?? 0n },
          { value: '2', revision: proclaimed.header?.revision ?? 0n },
        ]);
      } finally {
        stream.cancel();
      }
    });
  });
});
