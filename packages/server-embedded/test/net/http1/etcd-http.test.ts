// The client port's HTTP/1.x answers side by side with a real etcd of each installed version:
// the same requests, on raw connections, must get the same status lines, header fields (Date
// aside) and bodies; the embedded server answers as the real one's version (etcdVersion).
import { execFile, execFileSync } from 'node:child_process';
import { promisify } from 'node:util';
import { Etcd } from '@etcdkit/client';
import { describeRealEtcd, type EtcdProcess, lookUpEtcdBinary, startEtcd } from '@etcdkit/testkit';
import { afterAll, beforeAll, expect, it } from 'vitest';
import { EmbeddedEtcd, type EtcdVersion } from '../../../src/index.js';
import { comparable, type Exchange, exchange, get, type RawResponse } from './raw-http.js';

/** The embedded side of a comparison. */
interface Counterpart {
  readonly port: number;
  /** Raises (`on`) or clears an alarm of the member, as the Alarm RPC does on the real one. */
  alarm(type: 'NOSPACE' | 'CORRUPT', on: boolean): Promise<void>;
  /** Puts a new key, as a Put does on the real one. */
  putNew(key: string): Promise<void>;
  stop(): Promise<void>;
}

async function embeddedCounterpart(version: string): Promise<Counterpart> {
  const etcdVersion = version.split('.').slice(0, 2).join('.') as EtcdVersion;
  const server = await EmbeddedEtcd.start({ etcdVersion, version });
  const client = new Etcd({ endpoints: [...server.endpoints] });
  return {
    port: server.port,
    alarm: (type, on) => setAlarm(client, type, on),
    putNew: async (key) => {
      await client.put(key, 'v');
    },
    stop: async () => {
      await client.close();
      await server.stop();
    },
  };
}

async function setAlarm(client: Etcd, type: 'NOSPACE' | 'CORRUPT', on: boolean): Promise<void> {
  const memberId = (await client.maintenance.status()).header.memberId;
  if (on) await client.maintenance.activateAlarm(memberId, type);
  else await client.maintenance.deactivateAlarm(memberId, type);
}

/** A readyz/livez body with its check lines sorted: etcd lists its checks in Go's map order. */
function sortedChecks(response: RawResponse): RawResponse {
  const lines = response.body.split('\n');
  const checks = lines.filter((line) => line.startsWith('[')).sort();
  const rest = lines.filter((line) => !line.startsWith('['));
  return { ...response, body: [...checks, ...rest].join('\n') };
}

function comparableExchange(result: Exchange, normalise = (r: RawResponse) => r): unknown {
  return {
    closed: result.closed,
    responses: result.responses.map((response) => normalise(comparable(response))),
  };
}

/** Why curl cannot be run, or undefined when it can. */
const noCurl = ((): string | undefined => {
  try {
    execFileSync('curl', ['--version'], { stdio: 'ignore' });
    return undefined;
  } catch {
    return 'curl is not installed';
  }
})();

/** `curl -si URL` with the Date line left out. */
async function curl(url: string): Promise<string> {
  const { stdout } = await promisify(execFile)('curl', ['-si', '--path-as-is', url]);
  return stdout.replace(/^Date: .*\r\n/m, '');
}

describeRealEtcd('HTTP/1.x on the client port, as etcd answers', ({ binary }) => {
  const lookup = lookUpEtcdBinary(binary, '');
  const version = lookup.found ? lookup.binary.version : '0.0.0';
  const line = version.startsWith('3.4.') ? '3.4' : '3.5';
  let etcd: EtcdProcess;
  let realClient: Etcd;
  let ours: Counterpart;

  beforeAll(async () => {
    etcd = await startEtcd();
    realClient = new Etcd({ endpoints: [...etcd.endpoints] });
    ours = await embeddedCounterpart(version);
  }, 60_000);

  afterAll(async () => {
    await realClient?.close();
    await etcd?.stop();
    await ours?.stop();
  });

  /** Sends `request` to both servers and expects the same answers. */
  async function same(
    request: string | Buffer,
    options: Parameters<typeof exchange>[2] = {},
    normalise?: (response: RawResponse) => RawResponse,
  ): Promise<Exchange> {
    const [theirs, mine] = await Promise.all([
      exchange(etcd.clientPort, request, options),
      exchange(ours.port, request, options),
    ]);
    expect(comparableExchange(mine, normalise)).toEqual(comparableExchange(theirs, normalise));
    return mine;
  }

  async function raiseOnBoth(type: 'NOSPACE' | 'CORRUPT', on: boolean): Promise<void> {
    await Promise.all([setAlarm(realClient, type, on), ours.alarm(type, on)]);
  }

  it('GET /version: etcd JSON of the server and cluster versions', async () => {
    const result = await same(get('/version'));
    expect(JSON.parse(result.responses[0]!.body)).toEqual({
      etcdserver: version,
      etcdcluster: `${line}.0`,
    });
  });

  it('GET /health and its query forms on a healthy member', async () => {
    for (const target of [
      '/health',
      '/health?serializable=true',
      '/health?exclude=NOSPACE',
      '/health?exclude=&exclude=CORRUPT&serializable=1',
    ]) {
      const result = await same(get(target));
      expect(result.responses[0]!.status).toBe(200);
    }
  });

  it('/health is 503 with a NOSPACE alarm, unless excluded', async () => {
    await raiseOnBoth('NOSPACE', true);
    try {
      const failed = await same(get('/health'));
      expect(failed.responses[0]!.status).toBe(503);
      expect(failed.responses[0]!.body).toBe(
        line === '3.4' ? '{"health":"false"}\n' : '{"health":"false","reason":"ALARM NOSPACE"}\n',
      );
      const excluded = await same(get('/health?exclude=NOSPACE'));
      expect(excluded.responses[0]!.status).toBe(200);
      await same(get('/health?exclude=CORRUPT'));
      if (line !== '3.4') {
        // NOSPACE is no data corruption: ready all the same.
        const ready = await same(get('/readyz?verbose'), {}, sortedChecks);
        expect(ready.responses[0]!.status).toBe(200);
      }
    } finally {
      await raiseOnBoth('NOSPACE', false);
    }
    await same(get('/health'));
  });

  it('a CORRUPT alarm fails /health and /readyz, not /livez', async () => {
    await raiseOnBoth('CORRUPT', true);
    try {
      const failed = await same(get('/health'));
      expect(failed.responses[0]!.status).toBe(503);
      if (line !== '3.4') {
        const ready = await same(get('/readyz'), {}, sortedChecks);
        expect(ready.responses[0]!.status).toBe(503);
        expect(ready.responses[0]!.body).toContain(
          '[-]data_corruption failed: alarm activated: CORRUPT',
        );
        await same(get('/readyz/data_corruption'));
        await same(get('/readyz?exclude=data_corruption'));
        await same(get('/livez'));
      }
    } finally {
      await raiseOnBoth('CORRUPT', false);
    }
  });

  it('/livez and /readyz with their checks, exclusions and ?verbose (3.5.11 on; 404 on 3.4)', async () => {
    for (const target of [
      '/livez',
      '/readyz',
      '/livez?verbose',
      '/readyz?verbose',
      '/readyz?exclude=linearizable_read&exclude=nothing&verbose',
      '/livez?exclude=serializable_read&verbose',
      '/livez/serializable_read',
      '/readyz/linearizable_read?verbose',
      '/readyz/non_learner',
      '/readyz/data_corruption',
      '/livez/linearizable_read',
      '/readyz/',
    ]) {
      const result = await same(get(target), {}, sortedChecks);
      expect(result.responses).toHaveLength(1);
    }
  });

  it('other paths are 404, other methods 405 with Allow, OPTIONS is CORS 200', async () => {
    for (const target of ['/', '/nope', '/health/', '/healthz', '/v2/keys', '/version/x']) {
      const result = await same(get(target));
      expect(result.responses[0]!.body).toBe('404 page not found\n');
    }
    for (const [method, target] of [
      ['POST', '/version'],
      ['PUT', '/health'],
      ['DELETE', '/health'],
      ['POST', '/livez'],
      ['PATCH', '/readyz'],
    ] as const) {
      const result = await same(get(target, method));
      if (line === '3.4' && target.endsWith('z')) continue;
      expect(result.responses[0]!.status).toBe(405);
    }
    const head = await same(get('/health', 'HEAD'), { head: true });
    expect(head.responses[0]!.status).toBe(405);
    const options = await same(get('/nope', 'OPTIONS'));
    expect(options.responses[0]!.status).toBe(200);
  });

  it('a POST with a body is answered and the connection serves the next request', async () => {
    const body = 'x'.repeat(1000);
    const request = `POST /health HTTP/1.1\r\nHost: a\r\nContent-Length: ${body.length}\r\n\r\n${body}${get('/version')}`;
    const result = await same(request, { responses: 2 });
    expect(result.responses.map((response) => response.status)).toEqual([405, 200]);
  });

  it('paths are cleaned by a redirect, absolute-form targets are served', async () => {
    const moved = await same(get('/a/../health?serializable=true'));
    expect(moved.responses[0]!.status).toBe(301);
    await same(get('//health'));
    await same(get('/./version', 'POST'));
    const absolute = await same(get('http://example.com/version'));
    expect(absolute.responses[0]!.status).toBe(200);
  });

  it('keep-alive, pipelining, Connection: close and HTTP/1.0', async () => {
    const pipelined = await same(get('/health') + get('/version') + get('/nope'), {
      responses: 3,
    });
    expect(pipelined.responses.map((response) => response.status)).toEqual([200, 200, 404]);
    const closing = await same('GET /health HTTP/1.1\r\nHost: a\r\nConnection: close\r\n\r\n', {
      untilClose: true,
    });
    expect(closing.closed).toBe(true);
    const old = await same('GET /version HTTP/1.0\r\n\r\n', { untilClose: true });
    expect(old.responses[0]!.statusLine).toBe('HTTP/1.0 200 OK');
  });

  it('requests that cannot be served: no Host, not HTTP/1.x, too large a head', async () => {
    const noHost = await same('GET /health HTTP/1.1\r\n\r\n', { untilClose: true });
    expect(noHost.responses[0]!.statusLine).toBe(
      'HTTP/1.1 400 Bad Request: missing required Host header',
    );
    for (const request of ['GARBAGE\r\n\r\n', 'GET /health HTTP/2.0\r\nHost: a\r\n\r\n']) {
      const refused = await same(request, { untilClose: true });
      expect(refused.responses).toEqual([]);
    }
    // Past etcd's 1 MiB (and far past ours).
    const large = `GET /health HTTP/1.1\r\nHost: a\r\nX-Large: ${'a'.repeat(1_100_000)}\r\n\r\n`;
    const tooLarge = await same(large, { untilClose: true });
    expect(tooLarge.responses[0]!.status).toBe(431);
  });

  it.skipIf(noCurl !== undefined)(
    `curl http://127.0.0.1:PORT/health prints what it prints for etcd${noCurl === undefined ? '' : ` (skipped: ${noCurl})`}`,
    async () => {
      for (const path of ['/health', '/version', '/livez', '/nope']) {
        const [theirs, mine] = await Promise.all([
          curl(`http://127.0.0.1:${etcd.clientPort}${path}`),
          curl(`http://127.0.0.1:${ours.port}${path}`),
        ]);
        expect(mine).toBe(theirs);
      }
    },
  );

  it('/metrics: Prometheus text with etcd names, types and the values that agree', async () => {
    await Promise.all([realClient.put('metrics/a', 'v'), ours.putNew('metrics/a')]);
    const [theirs, mine] = await Promise.all([
      exchange(etcd.clientPort, get('/metrics')),
      exchange(ours.port, get('/metrics')),
    ]);
    const their = theirs.responses[0]!;
    const my = mine.responses[0]!;
    expect(my.status).toBe(200);
    const contentType = (response: RawResponse) =>
      response.headers.find(([name]) => name === 'Content-Type')?.[1];
    expect(contentType(my)).toBe(contentType(their));
    const theirSamples = samples(their.body);
    const mySamples = samples(my.body);
    // Every family we export is etcd's, with etcd's type.
    for (const [name, family] of mySamples) {
      expect(theirSamples.get(name)?.type, name).toBe(family.type);
    }
    expect([...mySamples.keys()]).toEqual(
      expect.arrayContaining([
        'etcd_server_has_leader',
        'etcd_server_is_leader',
        'etcd_server_leader_changes_seen_total',
        'etcd_mvcc_db_total_size_in_bytes',
        'etcd_debugging_mvcc_keys_total',
        'etcd_server_version',
      ]),
    );
    for (const name of [
      'etcd_cluster_version',
      'etcd_server_version',
      'etcd_server_has_leader',
      'etcd_server_is_leader',
      'etcd_server_is_learner',
      'etcd_server_leader_changes_seen_total',
      'etcd_server_quota_backend_bytes',
      'etcd_debugging_mvcc_keys_total',
      'etcd_debugging_mvcc_current_revision',
      'etcd_debugging_mvcc_compact_revision',
    ]) {
      expect(mySamples.get(name)?.lines, name).toEqual(theirSamples.get(name)?.lines);
    }
  });
});

/** The families of a Prometheus text: type and sample lines. */
function samples(text: string): Map<string, { type: string; lines: string[] }> {
  const families = new Map<string, { type: string; lines: string[] }>();
  for (const line of text.split('\n')) {
    const typed = /^# TYPE (\S+) (\S+)$/.exec(line);
    if (typed !== null) families.set(typed[1]!, { type: typed[2]!, lines: [] });
    else if (line !== '' && !line.startsWith('#')) {
      const name = /^[a-zA-Z_:][a-zA-Z0-9_:]*/.exec(line)![0];
      families.get(name)?.lines.push(line);
    }
  }
  return families;
}
