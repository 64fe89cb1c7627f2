import {
  etcdserverpb_Cluster as Cluster,
  grpc_health_v1_Health as Health,
  etcdserverpb_KV as KV,
  etcdserverpb_Maintenance as Maintenance,
  etcdserverpb_Watch as Watch,
} from '@etcdkit/client/protocol';
import { afterEach, describe, expect, it } from 'vitest';
import { EmbeddedEtcd } from '../../src/index.js';
import { b } from '../support/bytes.js';
import { RawClient, status } from '../support/grpc-client.js';
import { kv, op } from '../support/kv.js';
import { specBackend, startTestServer, type TestServer } from '../support/test-server.js';

const INVALID_ARGUMENT = 3;
const NOT_FOUND = 5;
const RESOURCE_EXHAUSTED = 8;
const UNIMPLEMENTED = 12;
const UNAVAILABLE = 14;
const tooLarge = status(INVALID_ARGUMENT, 'etcdserver: request is too large');

describe(`server [${specBackend}]`, () => {
  let server: TestServer | undefined;
  afterEach(async () => {
    await server?.stop();
    server = undefined;
  });

  it('every response header names the cluster, the member and raft term 2', async () => {
    server = await startTestServer();
    const api = kv(server);
    const put = await api.put('a', '1');
    const range = await api.range('a');
    for (const header of [put.header, range.header]) {
      expect(header?.clusterId).not.toBe(0n);
      expect(header?.memberId).not.toBe(0n);
      expect(header?.raftTerm).toBe(2n);
    }
    expect(range.header?.clusterId).toBe(put.header?.clusterId);
    expect(range.header?.memberId).toBe(put.header?.memberId);
  });

  it('Status reports the version, itself as leader and a raft index that counts writes', async () => {
    server = await startTestServer();
    const { client } = server;
    const first = await client.unary(Maintenance.Status, {});
    expect(first.version).toBe(server.version);
    expect(first.leader).toBe(first.header?.memberId);
    expect(first.header?.revision).toBe(1n);
    expect(first.raftTerm).toBe(2n);
    expect(first.raftIndex).toBe(first.raftAppliedIndex);
    expect(first.dbSize).toBeGreaterThan(0n);
    expect(first.errors).toEqual([]);
    expect(first.isLearner).toBe(false);
    await kv(server).put('a', '1');
    await kv(server).range('a');
    const second = await client.unary(Maintenance.Status, {});
    expect(second.raftIndex).toBe(first.raftIndex + 1n);
    expect(second.header?.revision).toBe(2n);
  });

  it('MemberList lists the one member, with header revision 0', async () => {
    server = await startTestServer();
    const response = await server.client.unary(Cluster.MemberList, {});
    expect(response.header?.revision ?? 0n).toBe(0n);
    expect(response.header?.raftTerm).toBe(2n);
    expect(response.members).toHaveLength(1);
    const [member] = response.members;
    expect(member?.ID).toBe(response.header?.memberId);
    expect(member?.clientURLs).toEqual([server.endpoint]);
    expect(member?.peerURLs).toHaveLength(1);
    expect(member?.isLearner ?? false).toBe(false);
  });

  it('the gRPC health service answers SERVING for the server, NotFound for other names', async () => {
    server = await startTestServer();
    const response = await server.client.unary(Health.Check, {});
    expect(response.status).toBe(1);
    await expect(
      server.client.unary(Health.Check, { service: 'etcdserverpb.KV' }),
    ).rejects.toMatchObject(status(NOT_FOUND, 'unknown service'));
  });

  it('a write of exactly max-request-bytes is too large; a slightly smaller one is fine', async () => {
    server = await startTestServer({ maxRequestBytes: 1024 });
    const api = kv(server);
    // key field 3 bytes + value field 3 bytes of overhead.
    await expect(api.put('k', 'x'.repeat(1024 - 6))).rejects.toMatchObject(tooLarge);
    await api.put('k', 'x'.repeat(1024 - 6 - 30));
    await expect(api.txn({ success: [op.put('k', 'x'.repeat(1024))] })).rejects.toMatchObject(
      tooLarge,
    );
    await expect(api.del('k'.repeat(1024))).rejects.toMatchObject(tooLarge);
  });

  it('reads are not held to max-request-bytes, only to the gRPC limit', async () => {
    server = await startTestServer({ maxRequestBytes: 1024 });
    const api = kv(server);
    expect((await api.range('k'.repeat(4096))).count).toBe(0n);
    expect((await api.txn({ success: [op.range('k'.repeat(4096))] })).succeeded).toBe(true);
  });

  it('a message over max-request-bytes + 512 KiB is refused by gRPC (ResourceExhausted)', async () => {
    server = await startTestServer({ maxRequestBytes: 1024 });
    await expect(kv(server).range('k'.repeat(1024 + 512 * 1024 + 1))).rejects.toMatchObject({
      code: RESOURCE_EXHAUSTED,
    });
  });

  it('a malformed request fails without harming the server', async () => {
    server = await startTestServer();
    await expect(
      server.client.unaryBytes(KV.Range, new Uint8Array([0x0a, 0x05, 0x61])),
    ).rejects.toMatchObject({
      code: expect.any(Number),
    });
    expect((await kv(server).put('a', '1')).header?.revision).toBe(2n);
  });
});

describe('embedded server', () => {
  it('answers Unimplemented for services it does not serve yet', async () => {
    // Downgrade came with etcd 3.5: answering as 3.4, the server does not serve it.
    const server = await EmbeddedEtcd.start({ etcdVersion: '3.4' });
    const client = new RawClient(server.endpoint);
    try {
      await expect(client.unary(Maintenance.Downgrade, {})).rejects.toMatchObject({
        code: UNIMPLEMENTED,
      });
      // Auth and Election, which this checked before, are served now; Health.Watch still is not.
      await expect(client.serverStream(Health.Watch, {})).rejects.toMatchObject({
        code: UNIMPLEMENTED,
      });
      expect(Watch.Watch.kind).toBe('bidi-stream');
    } finally {
      client.close();
      await server.stop();
    }
  });

  it('listens on a free port of 127.0.0.1 by default, and on the port asked for', async () => {
    await using first = await EmbeddedEtcd.start();
    expect(first.endpoint).toBe(`http://127.0.0.1:${first.port}`);
    expect(first.endpoints).toEqual([first.endpoint]);
    const port = first.port;
    await first.stop();
    await using again = await EmbeddedEtcd.start({ port });
    expect(again.port).toBe(port);
  });

  it('fails to start on a port in use', async () => {
    await using first = await EmbeddedEtcd.start();
    await expect(EmbeddedEtcd.start({ port: first.port })).rejects.toThrow(/EADDRINUSE|address/i);
  });

  it('stop() closes connections; later calls fail as Unavailable', async () => {
    const server = await EmbeddedEtcd.start();
    const client = new RawClient(server.endpoint);
    try {
      await kv({ client } as TestServer).put('a', '1');
      await server.stop();
      await server.stop();
      await expect(client.unary(KV.Range, { key: b('a') })).rejects.toMatchObject({
        code: UNAVAILABLE,
      });
    } finally {
      client.close();
    }
  });

  it('uses the ids and version it is given', async () => {
    const server = await EmbeddedEtcd.start({
      clusterId: 11n,
      memberId: 22n,
      etcdVersion: '3.6',
      version: '3.6.5',
    });
    const client = new RawClient(server.endpoint);
    try {
      const status = await client.unary(Maintenance.Status, {});
      expect(status.header).toMatchObject({ clusterId: 11n, memberId: 22n });
      expect(status.version).toBe('3.6.5');
      expect(status.storageVersion).toBe('3.6.0');
      expect(server.version).toBe('3.6.5');
    } finally {
      client.close();
      await server.stop();
    }
  });
});
