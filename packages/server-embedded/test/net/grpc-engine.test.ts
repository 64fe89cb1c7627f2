// Which gRPC server an EmbeddedEtcd serves on: its `transport` option, else the default (which
// ETCDKIT_TEST_SERVER_TRANSPORT changes for a test run). The two are told apart on the wire: the
// server's own HTTP/2 sends its SETTINGS as soon as a connection opens, while grpc-js's connections
// pass the authority check first (net/connection-handoff.ts), which waits for the client's preface.
import { createConnection } from 'node:net';
import { Etcd } from '@etcdkit/client';
import { describe, expect, it } from 'vitest';
import { CallGate } from '../../src/faults/call-gate.js';
import { EmbeddedCluster, EmbeddedEtcd } from '../../src/index.js';
import { DEFAULT_SERVER_TRANSPORT, grpcJsEngine } from '../../src/net/grpc-engine.js';

const FRAME_SETTINGS = 0x4;

/** The first bytes the server sends on a new connection within `ms`, before the client speaks. */
async function firstBytes(port: number, ms: number): Promise<Buffer> {
  const socket = createConnection({ host: '127.0.0.1', port });
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  await new Promise((resolve) => socket.once('connect', resolve));
  await new Promise((resolve) => setTimeout(resolve, ms));
  socket.destroy();
  return Buffer.concat(chunks);
}

describe('the gRPC server under EmbeddedEtcd', () => {
  it('is h2 by default, unless the test run asks for grpc-js', () => {
    expect(DEFAULT_SERVER_TRANSPORT).toBe(process.env.ETCDKIT_TEST_SERVER_TRANSPORT || 'h2');
  });

  it.each(['h2', 'grpc-js'] as const)('serves on %s when asked', async (transport) => {
    const server = await EmbeddedEtcd.start({ transport });
    const etcd = new Etcd({ endpoints: [...server.endpoints] });
    try {
      expect((await etcd.put('k', 'v')).header.revision).toBe(2n);
      expect((await etcd.get('k'))?.text()).toBe('v');
      const sent = await firstBytes(server.port, 200);
      if (transport === 'h2') {
        // A SETTINGS frame on stream 0 first.
        expect(sent.length).toBeGreaterThanOrEqual(9);
        expect(sent[3]).toBe(FRAME_SETTINGS);
        expect(sent.readUInt32BE(5)).toBe(0);
      } else {
        expect(sent.length).toBe(0);
      }
    } finally {
      await etcd.close();
      await server.stop();
    }
  });

  it("serves an EmbeddedCluster's members on h2, whatever the default", async () => {
    const cluster = await EmbeddedCluster.start({ members: 3 });
    try {
      for (const member of cluster.members) {
        const sent = await firstBytes(member.port, 200);
        expect(sent[3]).toBe(FRAME_SETTINGS);
      }
    } finally {
      await cluster.stop();
    }
  });

  it("refuses middleware on grpc-js (simulated clusters' leader gates serve on h2)", () => {
    const idle = { admitsAtOnce: () => true, open: () => ({}) as never };
    expect(() =>
      grpcJsEngine({ gate: new CallGate(), maxReceiveBytes: 1024, middleware: [idle] }),
    ).toThrow("transport 'grpc-js' serves no middleware");
  });
});
