// Unix socket endpoints (`unix:///abs`, `unix:rel`, `unix://name:port`) against a real etcd and
// the embedded server listening on one (etcd 3.4 takes only `unix://host:port` listen URLs: a socket
// file of that name in its working directory), over the default transport or ETCDKIT_TEST_TRANSPORT's.
import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join, relative } from 'node:path';
import { EmbeddedEtcd } from '@etcdkit/server-embedded';
import { freePort, requireEtcdBinary } from '@etcdkit/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import type { Member } from '../../src/cluster/cluster.js';
import { memberEndpoints } from '../../src/cluster/endpoint-sync.js';
import { Connection } from '../../src/connection/connection.js';
import { parseEndpoint } from '../../src/connection/options.js';
import { InvalidConfigError, UnavailableError } from '../../src/errors.js';
import { Etcd } from '../../src/index.js';

const text = (b: Uint8Array | null | undefined) => new TextDecoder().decode(b ?? new Uint8Array());

describe('unix endpoint parsing', () => {
  it.each([
    ['unix:///tmp/etcd.sock', 'unix:///tmp/etcd.sock'],
    ['unix:/tmp/etcd.sock', 'unix:///tmp/etcd.sock'],
    ['UNIX:///tmp/etcd.sock', 'unix:///tmp/etcd.sock'],
    ['unix:etcd.sock', 'unix:etcd.sock'],
    ['unix:run/etcd.sock', 'unix:run/etcd.sock'],
    // etcd 3.4's own form: the socket file `localhost:2379` in the working directory.
    ['unix://localhost:2379', 'unix:localhost:2379'],
  ])('%s is the socket %s', (raw, url) => {
    expect(parseEndpoint(raw)).toEqual({ url, target: url, secure: false });
  });

  it.each([
    ['unix:', /no socket path/],
    ['unix://', /no socket path/],
    ['unix:///', /no socket path/],
    ['unixs:///tmp/etcd.sock', /unixs .* not supported/],
    ['unix:///tmp/a?b', /cannot hold/],
  ])('refuses %s with InvalidConfigError', (raw, message) => {
    expect(() => parseEndpoint(raw)).toThrow(InvalidConfigError);
    expect(() => parseEndpoint(raw)).toThrow(message);
    expect(() => new Connection({ endpoints: [raw] })).toThrow(InvalidConfigError);
  });

  it('leaves the unix URLs of a member list out of endpoint sync, even for an http client', () => {
    const member: Member = {
      id: 1n,
      name: 'm1',
      peerUrls: [],
      clientUrls: ['unix://localhost:2379', 'http://10.0.0.1:2379'],
      isLearner: false,
    };
    expect(memberEndpoints([member], false)).toEqual({
      endpoints: ['http://10.0.0.1:2379'],
      ignored: ['unix://localhost:2379'],
    });
  });

  it('counts unix as http: mixing it with https is refused', () => {
    expect(
      () => new Connection({ endpoints: ['unix:///tmp/a.sock', 'https://127.0.0.1:2379'] }),
    ).toThrow(/mix http and https/);
    expect(() => new Connection({ endpoints: ['unix:///tmp/a.sock'], tls: {} })).toThrow(
      InvalidConfigError,
    );
  });
});

/** A server listening on a unix socket, and the client URL it advertises. */
interface UnixServer {
  readonly socket: string;
  readonly advertised: string;
  stop(): Promise<void>;
}

/**
 * A real etcd listening on `unix://localhost:2379` (3.4 takes only that form): the socket file
 * `localhost:2379` in its working directory, `dir`.
 */
async function startRealEtcd(dir: string): Promise<UnixServer> {
  const socket = join(dir, 'localhost:2379');
  const peer = `http://127.0.0.1:${await freePort()}`;
  const etcd = spawn(
    requireEtcdBinary().path,
    [
      '--data-dir',
      join(dir, 'data'),
      '--listen-client-urls',
      'unix://localhost:2379',
      '--advertise-client-urls',
      'unix://localhost:2379',
      '--listen-peer-urls',
      peer,
      '--initial-advertise-peer-urls',
      peer,
      '--initial-cluster',
      `default=${peer}`,
    ],
    { cwd: dir, stdio: 'ignore' },
  );
  const stop = async () => {
    if (etcd.exitCode !== null || etcd.signalCode !== null) return;
    const exited = new Promise((resolve) => etcd.once('exit', resolve));
    etcd.kill('SIGTERM');
    await exited;
  };
  // The socket file appears when etcd listens; the first call waits for the leader.
  const client = new Etcd({ endpoints: [`unix://${socket}`], dialTimeoutMs: 10_000 });
  try {
    for (let i = 0; !existsSync(socket); i++) {
      if (i > 200) throw new Error(`etcd made no socket at ${socket}`);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
    await client.get('warm-up');
  } catch (error) {
    await stop();
    throw error;
  } finally {
    await client.close();
  }
  return { socket, advertised: 'unix://localhost:2379', stop };
}

async function startEmbedded(dir: string): Promise<UnixServer> {
  const socket = join(dir, 'etcd.sock');
  const server = await EmbeddedEtcd.start({ listenClientUrls: [`unix://${socket}`] });
  return { socket, advertised: `unix://${socket}`, stop: () => server.stop() };
}

describe.each([
  ['a real etcd', startRealEtcd],
  ['the embedded server', startEmbedded],
])('%s on a unix socket', (_name, startServer) => {
  let dir: string;
  let server: UnixServer;
  let socket: string;

  beforeAll(async () => {
    dir = await mkdtemp(join(tmpdir(), 'etcdkit-unix-'));
    server = await startServer(dir);
    socket = server.socket;
  }, 30_000);

  afterAll(async () => {
    await server?.stop();
    await rm(dir, { recursive: true, force: true });
  });

  it('serves puts, gets and a watch over unix:///absolute/path', async () => {
    const client = new Etcd({ endpoints: [`unix://${socket}`] });
    try {
      const watcher = client.watch({ prefix: 'unix/' });
      await watcher.ready();
      const put = await client.put('unix/a', 'one');
      const got = await client.get('unix/a');
      expect(text(got?.value)).toBe('one');
      expect(got?.modRevision).toBe(put.header.revision);
      for await (const batch of watcher) {
        expect(batch.revision).toBe(put.header.revision);
        expect(batch.events.map((e) => `${e.type} ${text(e.kv.key)}`)).toEqual(['put unix/a']);
        break;
      }
    } finally {
      await client.close();
    }
  });

  it('reaches the same socket by a relative path and by etcd 3.4 form', async () => {
    const rel = relative(process.cwd(), socket);
    for (const endpoint of [`unix:${rel}`, `unix://${rel}`]) {
      const client = new Etcd({ endpoints: [endpoint] });
      try {
        await client.put('unix/rel', endpoint);
        expect(text((await client.get('unix/rel'))?.value)).toBe(endpoint);
      } finally {
        await client.close();
      }
    }
  });

  it('lists the advertised unix URL in the member list', async () => {
    const client = new Etcd({ endpoints: [`unix://${socket}`] });
    try {
      const members = await client.cluster.memberList();
      expect(members.members.map((m) => m.clientUrls)).toEqual([[server.advertised]]);
    } finally {
      await client.close();
    }
  });
});

describe('a unix endpoint without a server', () => {
  it('fails a call to a missing socket with Unavailable, not a hang', async () => {
    const client = new Etcd({
      endpoints: [`unix://${join(tmpdir(), `etcdkit-missing-${process.pid}.sock`)}`],
      dialTimeoutMs: 1_000,
      retry: { maxAttempts: 1 },
    });
    try {
      await expect(client.get('x')).rejects.toThrow(UnavailableError);
      await expect(client.get('x')).rejects.toThrow(/ENOENT/);
    } finally {
      await client.close();
    }
  });
});
