// etcd's HTTP endpoints in the states a single real etcd is not easily put in, with the answers
// etcd's handlers give there (server/etcdserver/api/etcdhttp/health.go, version.go in 3.5 and
// 3.6): no leader, a learner, 3.6's /version; and the numbers of /metrics as Go writes them.
import { afterEach, describe, expect, it } from 'vitest';
import { EmbeddedCluster } from '../../../src/index.js';
import { goFloat } from '../../../src/net/http1/metrics.js';
import { exchange, get } from './raw-http.js';
import { handView, serveView, type ViewServer } from './view-server.js';

let server: ViewServer | undefined;

afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function answer(path: string): Promise<{ status: number; body: string }> {
  const result = await exchange(server!.port, get(path));
  const response = result.responses[0]!;
  return { status: response.status, body: response.body };
}

describe('etcd HTTP endpoints', () => {
  it('without a leader: /health and /readyz fail, serializable checks and /livez pass', async () => {
    const view = handView('3.5', '3.5.30');
    view.leader = 0n;
    server = await serveView(view);
    expect(await answer('/health')).toEqual({
      status: 503,
      body: '{"health":"false","reason":"RAFT NO LEADER"}\n',
    });
    expect(await answer('/health?serializable=true')).toEqual({
      status: 200,
      body: '{"health":"true","reason":""}',
    });
    expect(await answer('/readyz')).toEqual({
      status: 503,
      body:
        '[+]data_corruption ok\n[+]serializable_read ok\n' +
        '[-]linearizable_read failed: etcdserver: request timed out\n[+]non_learner ok\n\n',
    });
    expect(await answer('/livez')).toEqual({ status: 200, body: 'ok\n' });
    const metrics = await answer('/metrics');
    expect(metrics.body).toContain('\netcd_server_has_leader 0\n');
    expect(metrics.body).toContain('\netcd_server_is_leader 0\n');
  });

  it('3.4 has no serializable health check: no leader fails /health whatever the query', async () => {
    const view = handView('3.4', '3.4.23');
    view.leader = 0n;
    server = await serveView(view);
    expect(await answer('/health?serializable=true')).toEqual({
      status: 503,
      body: '{"health":"false"}\n',
    });
  });

  it('a learner is not ready', async () => {
    const view = handView('3.5', '3.5.30');
    view.learner = true;
    server = await serveView(view);
    expect(await answer('/readyz/non_learner')).toEqual({
      status: 503,
      body: '[-]non_learner failed: not supported for learner\n\n',
    });
    expect((await answer('/metrics')).body).toContain('\netcd_server_is_learner 1\n');
  });

  it('3.6 adds the storage version to /version', async () => {
    server = await serveView(handView('3.6', '3.6.14'));
    expect(await answer('/version')).toEqual({
      status: 200,
      body: '{"etcdserver":"3.6.14","etcdcluster":"3.6.0","storage":"3.6.0"}',
    });
  });

  it('metric values are written as Go writes a float64', () => {
    expect(
      [0, 1, -1, 20480, 999999, 1e6, 2147483648, 0.5, 0.0001, 0.00001, 1.5e21].map(goFloat),
    ).toEqual([
      '0',
      '1',
      '-1',
      '20480',
      '999999',
      '1e+06',
      '2.147483648e+09',
      '0.5',
      '0.0001',
      '1e-05',
      '1.5e+21',
    ]);
  });
});

describe('etcd HTTP endpoints on EmbeddedCluster members', () => {
  it('a partitioned member has no leader: /health fails, the others stay healthy', async () => {
    const cluster = await EmbeddedCluster.start({ members: 3 });
    try {
      const [cut, other] = cluster.members as [
        (typeof cluster.members)[number],
        (typeof cluster.members)[number],
      ];
      cut.partition();
      const health = async (port: number, path = '/health') =>
        (await exchange(port, get(path))).responses[0]!;
      const failed = await health(cut.port);
      expect([failed.status, failed.body]).toEqual([
        503,
        '{"health":"false","reason":"RAFT NO LEADER"}\n',
      ]);
      expect((await health(cut.port, '/health?serializable=true')).status).toBe(200);
      expect((await health(other.port)).status).toBe(200);
      cut.heal();
      expect((await health(cut.port)).status).toBe(200);
    } finally {
      await cluster.stop();
    }
  });
});
