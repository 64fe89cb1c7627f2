// listenClientUrls / advertiseClientUrls: several URLs, each served; MemberList reports the
// advertised ones; URLs etcd would refuse are refused before anything listens.
import { Etcd } from '@etcdkit/client';
import { describe, expect, it } from 'vitest';
import { ClientUrlError, EmbeddedEtcd } from '../../src/index.js';

describe('client URLs', () => {
  it('listens on every listen URL (free ports for port 0) and serves each', async () => {
    const server = await EmbeddedEtcd.start({
      listenClientUrls: ['http://127.0.0.1:0', 'http://localhost:0'],
    });
    try {
      expect(server.endpoints).toHaveLength(2);
      expect(server.endpoints[0]).toMatch(/^http:\/\/127\.0\.0\.1:\d+$/);
      expect(server.endpoints[1]).toMatch(/^http:\/\/localhost:\d+$/);
      expect(server.endpoint).toBe(server.endpoints[0]);
      expect(server.endpoints[0]).not.toBe(server.endpoints[1]!.replace('localhost', '127.0.0.1'));
      for (const endpoint of server.endpoints) {
        const etcd = new Etcd({ endpoints: [endpoint] });
        try {
          await etcd.put('via', endpoint);
          expect((await etcd.get('via'))?.text()).toBe(endpoint);
        } finally {
          await etcd.close();
        }
      }
      const etcd = new Etcd({ endpoints: [server.endpoint] });
      try {
        const { members } = await etcd.cluster.memberList();
        expect(members.map((member) => member.clientUrls)).toEqual([server.endpoints]);
      } finally {
        await etcd.close();
      }
    } finally {
      await server.stop();
    }
  });

  it('reports the advertised client URLs in MemberList', async () => {
    const server = await EmbeddedEtcd.start({
      advertiseClientUrls: ['http://etcd-0.example:2379', 'https://[::1]:2379/'],
    });
    const etcd = new Etcd({ endpoints: [...server.endpoints] });
    try {
      const { members } = await etcd.cluster.memberList();
      expect(members[0]!.clientUrls).toEqual(['http://etcd-0.example:2379', 'https://[::1]:2379']);
    } finally {
      await etcd.close();
      await server.stop();
    }
  });

  it.each([
    [['https://127.0.0.1:0'], /TLS key\/cert must be provided/],
    [['http://example.com:2379'], /expected IP in URL for binding/],
    [['unixs://socket:0'], /unsupported scheme/],
    [['http://127.0.0.1'], /expected http\(s\):\/\/host:port/],
    [['http://127.0.0.1:2379/path'], /expected http\(s\):\/\/host:port/],
  ])('refuses listen URLs %j', async (listenClientUrls, message) => {
    await expect(EmbeddedEtcd.start({ listenClientUrls })).rejects.toThrow(ClientUrlError);
    await expect(EmbeddedEtcd.start({ listenClientUrls })).rejects.toThrow(message);
  });

  it('refuses port together with listenClientUrls', async () => {
    await expect(
      EmbeddedEtcd.start({ port: 0, listenClientUrls: ['http://127.0.0.1:0'] }),
    ).rejects.toThrow('give either port or listenClientUrls, not both');
  });

  it('fails to start on a port in use, and releases the URLs it had bound', async () => {
    const first = await EmbeddedEtcd.start();
    try {
      await expect(
        EmbeddedEtcd.start({ listenClientUrls: ['http://127.0.0.1:0', first.endpoint] }),
      ).rejects.toThrow(/EADDRINUSE/);
      await expect(EmbeddedEtcd.start({ port: first.port })).rejects.toThrow(/EADDRINUSE/);
    } finally {
      await first.stop();
    }
  });
});
