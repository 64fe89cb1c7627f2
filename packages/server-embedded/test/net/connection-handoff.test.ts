// How a plain connection reaches the HTTP/2 session (connection-handoff.ts): before its first
// request the server has answered its preface and its pings, and the session takes over without
// seeing the ACK of a SETTINGS frame it never sent; a scheme in the first request's :authority
// still goes through the authority filter.
import { type ClientHttp2Session, connect } from 'node:http2';
import { Etcd } from '@etcdkit/client';
import { etcdserverpb_KV as KV } from '@etcdkit/client/protocol';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { EmbeddedEtcd } from '../../src/index.js';

function range(session: ClientHttp2Session, authority?: string): Promise<string | undefined> {
  const message = KV.Range.request.encode({ key: Buffer.from('k') }).finish();
  const body = Buffer.alloc(5 + message.length);
  body.writeUInt32BE(message.length, 1);
  body.set(message, 5);
  return new Promise((resolve, reject) => {
    const stream = session.request({
      ':method': 'POST',
      ':path': KV.Range.path,
      ...(authority === undefined ? {} : { ':authority': authority }),
      'content-type': 'application/grpc',
      te: 'trailers',
    });
    let status: string | undefined;
    stream.on('trailers', (trailers) => {
      status = String(trailers['grpc-status']);
    });
    stream.on('error', reject);
    stream.resume();
    stream.on('close', () => resolve(status));
    stream.end(body);
  });
}

describe('plain connections handed to the HTTP/2 session', () => {
  let server: EmbeddedEtcd;
  beforeAll(async () => {
    server = await EmbeddedEtcd.start();
  });
  afterAll(async () => {
    await server.stop();
  });

  it('answers pings sent before the first request, then serves requests', async () => {
    const session = connect(server.endpoint);
    try {
      await new Promise<void>((resolve, reject) => {
        session.once('remoteSettings', () => resolve());
        session.once('error', reject);
      });
      for (let i = 0; i < 3; i++) {
        await new Promise<void>((resolve, reject) => {
          session.ping((error) => (error ? reject(error) : resolve()));
        });
      }
      expect(await range(session)).toBe('0');
      expect(await range(session)).toBe('0');
      // The session took over: pings are its own now.
      await new Promise<void>((resolve, reject) => {
        session.ping((error) => (error ? reject(error) : resolve()));
      });
      expect(session.destroyed).toBe(false);
    } finally {
      session.close();
    }
  });

  it('serves a connection whose authority has a scheme through the filter', async () => {
    const session = connect(server.endpoint);
    try {
      expect(await range(session, `http://127.0.0.1:${server.port}`)).toBe('0');
      expect(await range(session, `http://127.0.0.1:${server.port}`)).toBe('0');
    } finally {
      session.close();
    }
  });

  it('serves clients on many connections at once', async () => {
    const clients = Array.from({ length: 4 }, () => new Etcd({ endpoints: [...server.endpoints] }));
    try {
      await Promise.all(clients.map((etcd, i) => etcd.put(`c/${i}`, String(i))));
      const read = await clients[0]!.range({ prefix: 'c/' });
      expect(read.kvs.map((kv) => kv.text())).toEqual(['0', '1', '2', '3']);
    } finally {
      await Promise.all(clients.map((etcd) => etcd.close()));
    }
  });
});
