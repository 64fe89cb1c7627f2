// Failover, dial timeout and the write-safety guarantees of Connection, against real etcd members
// and loopback fault injectors (closed ports, a black hole, a proxy that cuts the connection after
// the request was delivered); the three-member suite runs on the embedded server's simulated
// cluster and on a real etcd cluster.
import { createServer, type Server, type Socket, connect as tcpConnect } from 'node:net';
import {
  type BlackHole,
  describeEachCluster,
  type EtcdProcess,
  freePort,
  startBlackHole,
  startEtcd,
  type TestClusterMember,
} from '@etcdkit/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { Connection } from '../../src/connection/connection.js';
import { EtcdError, OutcomeUnknownError, UnavailableError } from '../../src/errors.js';
import { etcdserverpb_KV } from '../../src/generated/methods.js';

const bytes = (s: string) => new TextEncoder().encode(s);

/**
 * A TCP proxy that, once armed, forwards the client's bytes to the server but kills both sockets
 * when the server starts answering a call (the first HEADERS or DATA frame on a stream). The
 * server has then processed the request: the client cannot know that.
 */
async function startCuttingProxy(port: number) {
  let armed = false;
  let cuts = 0;
  const sockets = new Set<Socket>();
  const server: Server = createServer((client) => {
    const upstream = tcpConnect(port, '127.0.0.1');
    sockets.add(client);
    sockets.add(upstream);
    const kill = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on('error', kill).on('close', kill);
    upstream.on('error', kill).on('close', kill);
    client.on('data', (chunk: Buffer) => upstream.write(chunk));
    // Server-to-client HTTP/2 frames, parsed only to find where answers start.
    let pending = Buffer.alloc(0);
    upstream.on('data', (chunk: Buffer) => {
      pending = Buffer.concat([pending, chunk]);
      let offset = 0;
      while (pending.length - offset >= 9) {
        const length = pending.readUIntBE(offset, 3);
        const type = pending[offset + 3]!;
        const stream = pending.readUInt32BE(offset + 5) & 0x7fffffff;
        if (armed && stream !== 0 && (type === 0 || type === 1)) {
          armed = false;
          cuts++;
          kill();
          return;
        }
        if (pending.length - offset - 9 < length) break;
        offset += 9 + length;
      }
      client.write(pending.subarray(0, offset));
      pending = pending.subarray(offset);
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('no address');
  return {
    endpoint: `http://127.0.0.1:${address.port}`,
    arm() {
      armed = true;
    },
    get cuts() {
      return cuts;
    },
    async close() {
      for (const s of sockets) s.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
}

async function version(conn: Connection, key: string): Promise<bigint | null | undefined> {
  const res = await conn.unary(etcdserverpb_KV.Range, { key: bytes(key) }, 'read');
  return res.kvs[0]?.version;
}

describe('failover and write safety (one etcd member)', () => {
  let etcd: EtcdProcess;
  let direct: Connection;
  let blackHole: BlackHole;
  let closedPort: string;

  beforeAll(async () => {
    [etcd, blackHole] = await Promise.all([startEtcd(), startBlackHole()]);
    closedPort = `http://127.0.0.1:${await freePort()}`;
    direct = new Connection({ endpoints: [etcd.endpoint] });
  });
  afterAll(async () => {
    await direct?.close();
    await blackHole?.close();
    await etcd?.stop();
  });

  it('reads via the second endpoint when the first refuses connections', async () => {
    await direct.unary(etcdserverpb_KV.Put, { key: bytes('f1'), value: bytes('v') }, 'write');
    const switches: string[] = [];
    const conn = new Connection({
      endpoints: [closedPort, etcd.endpoint],
      hooks: { onEndpointSwitch: (e) => switches.push(`${e.from} -> ${e.to}`) },
    });
    try {
      const res = await conn.unary(etcdserverpb_KV.Range, { key: bytes('f1') }, 'read');
      expect(res.kvs).toHaveLength(1);
      expect(conn.currentEndpoint).toBe(new URL(etcd.endpoint).host);
      expect(switches).toEqual([`${new URL(closedPort).host} -> ${new URL(etcd.endpoint).host}`]);
    } finally {
      await conn.close();
    }
  });

  it('retries a provably unsent write on the next endpoints: applied exactly once', async () => {
    const another = `http://127.0.0.1:${await freePort()}`;
    const conn = new Connection({ endpoints: [closedPort, another, etcd.endpoint] });
    try {
      await conn.unary(etcdserverpb_KV.Put, { key: bytes('f2'), value: bytes('v') }, 'write');
      expect(await version(direct, 'f2')).toBe(1n);
    } finally {
      await conn.close();
    }
  });

  it('makes the dial timeout real: a black hole fails with UnavailableError after dialTimeoutMs, not the call timeout', async () => {
    const conn = new Connection({
      endpoints: [blackHole.endpoint],
      dialTimeoutMs: 500,
      callTimeoutMs: 60_000,
    });
    try {
      const started = Date.now();
      const error = await conn
        .unary(etcdserverpb_KV.Range, { key: bytes('x') }, 'read')
        .catch((e: unknown) => e);
      const elapsed = Date.now() - started;
      expect(error).toBeInstanceOf(UnavailableError);
      expect(elapsed).toBeGreaterThanOrEqual(450);
      // Without the dial timeout the call would wait for its 60 s deadline: 15 s separates the two
      // behaviours however loaded the machine is.
      expect(elapsed).toBeLessThan(15_000);
    } finally {
      await conn.close();
    }
  });

  it('moves past a black hole to the next endpoint after the dial timeout', async () => {
    const switches: string[] = [];
    const conn = new Connection({
      endpoints: [blackHole.endpoint, etcd.endpoint],
      dialTimeoutMs: 300,
      hooks: { onEndpointSwitch: (e) => switches.push(`${e.from} -> ${e.to}`) },
    });
    try {
      await direct.unary(etcdserverpb_KV.Put, { key: bytes('f1'), value: bytes('v') }, 'write');
      const res = await conn.unary(etcdserverpb_KV.Range, { key: bytes('f1') }, 'read');
      expect(res.kvs).toHaveLength(1);
      const moved = `${new URL(blackHole.endpoint).host} -> ${new URL(etcd.endpoint).host}`;
      expect(switches).toEqual([moved]);
      // Later calls go straight to the healthy endpoint: no second dial of the black hole, so no
      // second switch away from it.
      await conn.unary(etcdserverpb_KV.Range, { key: bytes('f1') }, 'read');
      expect(switches).toEqual([moved]);
      expect(conn.currentEndpoint).toBe(new URL(etcd.endpoint).host);
    } finally {
      await conn.close();
    }
  });

  it('reports a write cut after delivery as OutcomeUnknownError and never retries it', async () => {
    const proxy = await startCuttingProxy(etcd.clientPort);
    const retries: string[] = [];
    const conn = new Connection({
      endpoints: [proxy.endpoint],
      hooks: { onRetry: (e) => retries.push(e.method) },
    });
    try {
      // Connect and exchange one call first, so the request below is sent on a READY channel.
      await conn.unary(etcdserverpb_KV.Range, { key: bytes('f3') }, 'read');
      proxy.arm();
      const error = await conn
        .unary(etcdserverpb_KV.Put, { key: bytes('f3'), value: bytes('once') }, 'write')
        .catch((e: unknown) => e);
      expect(proxy.cuts).toBe(1);
      expect(error).toBeInstanceOf(OutcomeUnknownError);
      expect((error as Error).cause).toBeInstanceOf(EtcdError);
      expect(retries).toEqual([]);
      // The server applied it, exactly once.
      expect(await version(direct, 'f3')).toBe(1n);
    } finally {
      await conn.close();
      await proxy.close();
    }
  });

  it('retries a read whose connection was cut after delivery', async () => {
    const proxy = await startCuttingProxy(etcd.clientPort);
    const conn = new Connection({ endpoints: [proxy.endpoint] });
    try {
      await direct.unary(etcdserverpb_KV.Put, { key: bytes('f1'), value: bytes('v') }, 'write');
      await conn.unary(etcdserverpb_KV.Range, { key: bytes('f1') }, 'read');
      proxy.arm();
      const res = await conn.unary(etcdserverpb_KV.Range, { key: bytes('f1') }, 'read');
      expect(proxy.cuts).toBe(1);
      expect(res.kvs).toHaveLength(1);
    } finally {
      await conn.close();
      await proxy.close();
    }
  });

  it('retries reads across a server restart', async () => {
    let retries = 0;
    const conn = new Connection({
      endpoints: [etcd.endpoint],
      retry: { maxAttempts: 40, minDelayMs: 50, maxDelayMs: 250 },
      hooks: { onRetry: () => retries++ },
    });
    try {
      await conn.unary(etcdserverpb_KV.Put, { key: bytes('f4'), value: bytes('v') }, 'write');
      await etcd.kill();
      const read = conn.unary(etcdserverpb_KV.Range, { key: bytes('f4') }, 'read', {
        timeoutMs: 20_000,
      });
      await new Promise((r) => setTimeout(r, 200));
      await etcd.restart();
      const res = await read;
      expect(res.kvs).toHaveLength(1);
      expect(retries).toBeGreaterThan(0);
    } finally {
      await conn.close();
    }
  });
});

describeEachCluster('a three-member cluster', ({ cluster }) => {
  it('keeps serving reads and writes when the current member dies', async () => {
    const conn = new Connection({ endpoints: cluster().endpoints });
    try {
      await conn.unary(etcdserverpb_KV.Put, { key: bytes('c1'), value: bytes('1') }, 'write');
      const first = cluster().members.find(
        (m) => new URL(m.endpoint).host === conn.currentEndpoint,
      )!;
      await first.kill();
      const res = await conn.unary(etcdserverpb_KV.Range, { key: bytes('c1') }, 'read');
      expect(res.kvs).toHaveLength(1);
      expect(conn.currentEndpoint).not.toBe(new URL(first.endpoint).host);
      await first.start();
    } finally {
      await conn.close();
    }
  });

  it('with requireLeader, a member that lost its leader answers NoLeader instead of hanging', async () => {
    const [m0, m1, m2] = cluster().members as [
      TestClusterMember,
      TestClusterMember,
      TestClusterMember,
    ];
    await cluster().waitForLeader();
    await Promise.all([m1.kill(), m2.kill()]);
    const conn = new Connection({
      endpoints: [m0.endpoint],
      requireLeader: true,
      retry: { maxAttempts: 2 },
    });
    try {
      // etcd notices the lost quorum after its election timeout; until then calls may pass.
      const deadline = Date.now() + 20_000;
      let error: unknown;
      while (Date.now() < deadline) {
        error = await conn
          .unary(etcdserverpb_KV.Range, { key: bytes('c1') }, 'read', { timeoutMs: 3_000 })
          .then(() => undefined)
          .catch((e: unknown) => e);
        if (error instanceof EtcdError && error.code === 'NO_LEADER') break;
        await new Promise((r) => setTimeout(r, 200));
      }
      expect(error).toBeInstanceOf(EtcdError);
      expect((error as EtcdError).code).toBe('NO_LEADER');
    } finally {
      await conn.close();
      await Promise.all([m1.start(), m2.start()]);
    }
  }, 60_000);
});
