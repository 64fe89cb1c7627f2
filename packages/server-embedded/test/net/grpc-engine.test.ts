// The gRPC server under EmbeddedEtcd and every EmbeddedCluster member is the server's own HTTP/2
// (net/h2), told on the wire: its SETTINGS answer the client's HTTP/2 preface at once, with
// nothing else asked. (It waits for the client's first octets: the port serves HTTP/1.x too.)
import { createConnection } from 'node:net';
import { Etcd } from '@etcdkit/client';
import { describe, expect, it } from 'vitest';
import { EmbeddedCluster, EmbeddedEtcd } from '../../src/index.js';

const FRAME_SETTINGS = 0x4;

const H2_PREFACE = 'PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n';

/** The first bytes the server sends within `ms` on a new connection that sent only the preface. */
async function firstBytes(port: number, ms: number): Promise<Buffer> {
  const socket = createConnection({ host: '127.0.0.1', port });
  const chunks: Buffer[] = [];
  socket.on('data', (chunk: Buffer) => chunks.push(chunk));
  await new Promise((resolve) => socket.once('connect', resolve));
  socket.write(H2_PREFACE);
  await new Promise((resolve) => setTimeout(resolve, ms));
  socket.destroy();
  return Buffer.concat(chunks);
}

/** A SETTINGS frame on stream 0 first. */
function expectSettingsFirst(sent: Buffer): void {
  expect(sent.length).toBeGreaterThanOrEqual(9);
  expect(sent[3]).toBe(FRAME_SETTINGS);
  expect(sent.readUInt32BE(5)).toBe(0);
}

describe('the gRPC server under EmbeddedEtcd', () => {
  it("is the server's own HTTP/2", async () => {
    const server = await EmbeddedEtcd.start();
    const etcd = new Etcd({ endpoints: [...server.endpoints] });
    try {
      expect((await etcd.put('k', 'v')).header.revision).toBe(2n);
      expect((await etcd.get('k'))?.text()).toBe('v');
      expectSettingsFirst(await firstBytes(server.port, 200));
    } finally {
      await etcd.close();
      await server.stop();
    }
  });

  it("is the server's own HTTP/2 for every EmbeddedCluster member too", async () => {
    const cluster = await EmbeddedCluster.start({ members: 3 });
    try {
      for (const member of cluster.members) expectSettingsFirst(await firstBytes(member.port, 200));
    } finally {
      await cluster.stop();
    }
  });
});
