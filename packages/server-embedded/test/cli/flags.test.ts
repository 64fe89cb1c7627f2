// Parsing etcd's flags as etcd (Go's flag package) does, and turning them into server options.
import { describe, expect, it } from 'vitest';
import { requestTimeoutMs } from '../../src/cli/cluster-config.js';
import { autoCompactionOf, buildConfig, ConfigError, minLeaseTtl } from '../../src/cli/config.js';
import { parseGoDuration } from '../../src/cli/duration.js';
import { FlagError, parseFlags } from '../../src/cli/flags.js';

const parsed = (args: string[], env: Record<string, string> = {}) =>
  Object.fromEntries(parseFlags(args, env).values);

describe('parseFlags', () => {
  it('takes --flag value, --flag=value, -flag value and -flag=value', () => {
    expect(
      parsed(['--name', 'a', '--max-txn-ops=5', '-max-request-bytes', '10', '-log-level=debug']),
    ).toEqual({
      name: 'a',
      'max-txn-ops': '5',
      'max-request-bytes': '10',
      'log-level': 'debug',
    });
  });

  it('reads booleans as --flag, --flag=true or --flag=false only', () => {
    expect(parsed(['--client-cert-auth'])).toEqual({ 'client-cert-auth': 'true' });
    expect(parsed(['--client-cert-auth=0'])).toEqual({ 'client-cert-auth': 'false' });
    expect(() => parsed(['--client-cert-auth', 'false'])).toThrow("'false' is not a valid flag");
    expect(() => parsed(['--client-cert-auth=yes'])).toThrow(FlagError);
  });

  it('lets the last occurrence win and keeps an empty value given with =', () => {
    expect(parsed(['--name', 'a', '--name=b', '--cert-file='])).toEqual({
      name: 'b',
      'cert-file': '',
    });
  });

  it('takes a value that starts with a dash as a value', () => {
    expect(parsed(['--quota-backend-bytes', '-1'])).toEqual({ 'quota-backend-bytes': '-1' });
  });

  it.each([
    [['--bogus'], 'flag provided but not defined: --bogus'],
    [['--max-txn-ops'], 'flag needs an argument: --max-txn-ops'],
    [['--max-txn-ops', '-1'], 'invalid value "-1" for flag --max-txn-ops'],
    [['---name=a'], 'bad flag syntax: ---name=a'],
    [['--=a'], 'bad flag syntax: --=a'],
    [['serve'], "'serve' is not a valid flag"],
    [['--', '--name=a'], "'--name=a' is not a valid flag"],
    [['--experimental-watch-progress-notify-interval', '10'], 'invalid value "10"'],
  ])('refuses %j', (args, message) => {
    expect(() => parsed(args)).toThrow(FlagError);
    expect(() => parsed(args)).toThrow(message);
  });

  it('fills flags not given from ETCD_* variables; the command line wins', () => {
    expect(
      parsed(['--name', 'cli'], {
        ETCD_NAME: 'env',
        ETCD_MAX_TXN_OPS: '7',
        ETCD_LISTEN_CLIENT_URLS: 'http://127.0.0.1:1',
        ETCDCTL_API: '3',
      }),
    ).toEqual({ name: 'cli', 'max-txn-ops': '7', 'listen-client-urls': 'http://127.0.0.1:1' });
    expect(parseFlags([], { ETCD_NAME: 'env' }).fromEnvironment).toEqual(new Set(['name']));
    expect(() => parsed([], { ETCD_MAX_TXN_OPS: 'x' })).toThrow(
      'invalid value "x" for flag ETCD_MAX_TXN_OPS',
    );
  });
});

describe('buildConfig', () => {
  const config = (args: string[]) => buildConfig(parseFlags(args));

  it("defaults to etcd's client URL and the server defaults", async () => {
    expect(await config([])).toEqual({
      options: { name: 'default', listenClientUrls: ['http://localhost:2379'] },
      logLevel: 'info',
      logOutput: 'stderr',
      warnings: [],
    });
  });

  it('maps the supported flags to options', async () => {
    const { options } = await config([
      '--name=n',
      '--listen-client-urls=http://127.0.0.1:1, http://localhost:2',
      '--advertise-client-urls=http://a:1',
      '--max-txn-ops=3',
      '--max-request-bytes=1000',
      '--quota-backend-bytes=-1',
      '--auto-compaction-mode=revision',
      '--auto-compaction-retention=100',
      '--experimental-watch-progress-notify-interval=1m30s',
      '--heartbeat-interval=10',
      '--election-timeout=100',
    ]);
    expect(options).toEqual({
      name: 'n',
      listenClientUrls: ['http://127.0.0.1:1', 'http://localhost:2'],
      advertiseClientUrls: ['http://a:1'],
      maxTxnOps: 3,
      maxRequestBytes: 1000,
      quotaBackendBytes: -1,
      autoCompaction: { mode: 'revision', retention: 100 },
      watchProgressNotifyIntervalMs: 90_000,
      minLeaseTtl: 1,
    });
  });

  it('warns about flags it accepts without using them', async () => {
    const { warnings } = await config([
      '--wal-dir=/var/lib/etcd/wal',
      '--initial-cluster=a=http://127.0.0.1:2380',
      '--enable-v2=false',
      '--logger=capnslog',
    ]);
    expect(warnings).toEqual([
      '--wal-dir is accepted and ignored: the embedded server is a single member',
      '--initial-cluster is accepted and ignored: the embedded server is a single member',
      '--logger=capnslog is accepted, but logs are written as JSON lines (zap)',
    ]);
  });

  it('keeps the state in --data-dir, with the snapshot count and simple tokens', async () => {
    const { options, warnings } = await config([
      '--data-dir=/var/lib/etcd',
      '--snapshot-count=500',
      '--auth-token=simple',
      '--auth-token-ttl=60',
    ]);
    expect(options).toMatchObject({
      dataDir: '/var/lib/etcd',
      snapshotCount: 500,
      authTokenTtlSeconds: 60,
    });
    expect(warnings).toEqual([]);
    await expect(config(['--auth-token=jwt,pub-key=a.pub'])).rejects.toThrow(
      'unsupported --auth-token "jwt,pub-key=a.pub": only simple tokens are issued',
    );
  });

  it('refuses unsupported etcd flags as a command-line error', async () => {
    await expect(config(['--config-file=/etc/etcd.yaml'])).rejects.toThrow(FlagError);
    await expect(config(['--auto-tls'])).rejects.toThrow(
      '--auto-tls is not supported by etcdkit-server',
    );
  });

  it.each([
    [['--log-level=verbose'], 'unknown --log-level'],
    [['--log-outputs=/var/log/etcd.log'], 'unsupported --log-outputs'],
    [['--logger=glog'], 'unknown --logger'],
    [['--cert-file=/a.crt'], 'TLS needs both --cert-file and --key-file'],
    [['--election-timeout=400'], 'must be at least 5 times --heartbeat-interval (100 ms)'],
  ])('refuses %j as a configuration error', async (args, message) => {
    await expect(config(args)).rejects.toThrow(ConfigError);
    await expect(config(args)).rejects.toThrow(message);
  });

  it('maps panic and fatal log levels to error', async () => {
    expect((await config(['--log-level=fatal'])).logLevel).toBe('error');
    expect((await config(['--log-outputs=stdout'])).logOutput).toBe('stdout');
  });
});

describe('buildConfig with --simulated-members', () => {
  const config = (args: string[], env: Record<string, string> = {}) =>
    buildConfig(parseFlags(args, env));

  it("serves the members on consecutive ports from the listen URL, etcd's 2379 by default", async () => {
    expect((await config(['--simulated-members=3'])).cluster).toEqual({
      members: 3,
      ports: [2379, 2380, 2381],
    });
    expect(
      (await config(['--simulated-members=2', '--listen-client-urls=http://127.0.0.1:0'])).cluster,
    ).toEqual({ members: 2 });
    expect((await config(['--simulated-members=0'])).cluster).toBeUndefined();
  });

  it('applies the flags that shape a whole cluster; the election timeout sets the request timeout', async () => {
    const { cluster } = await config([
      '--simulated-members=5',
      '--listen-client-urls=http://localhost:23790',
      '--max-txn-ops=3',
      '--max-request-bytes=1000',
      '--quota-backend-bytes=-1',
      '--auth-token-ttl=60',
      '--auto-compaction-mode=revision',
      '--auto-compaction-retention=100',
      '--experimental-watch-progress-notify-interval=1m',
      '--heartbeat-interval=10',
      '--election-timeout=100',
    ]);
    expect(cluster).toEqual({
      members: 5,
      ports: [23790, 23791, 23792, 23793, 23794],
      requestTimeoutMs: 5_200,
      maxTxnOps: 3,
      maxRequestBytes: 1000,
      quotaBackendBytes: -1,
      authTokenTtlSeconds: 60,
      autoCompaction: { mode: 'revision', retention: 100 },
      watchProgressNotifyIntervalMs: 60_000,
      minLeaseTtl: 1,
    });
    expect(requestTimeoutMs(100, 1000)).toBe(7_000);
  });

  it('warns about ignored peer flags in terms of the simulated members', async () => {
    const { warnings } = await config(['--simulated-members=3', '--initial-cluster=a=http://b:1']);
    expect(warnings).toEqual([
      '--initial-cluster is accepted and ignored: the simulated members have no peer or metrics listeners',
    ]);
  });

  it.each([
    [
      ['--data-dir=/var/lib/etcd'],
      '--data-dir cannot be used with --simulated-members: the simulated cluster keeps its state in memory only',
    ],
    [['--snapshot-count=10'], '--snapshot-count cannot be used with --simulated-members'],
    [
      ['--name=infra0'],
      '--name cannot be used with --simulated-members: the members are named member0, member1...',
    ],
    [
      ['--advertise-client-urls=http://a:1'],
      '--advertise-client-urls cannot be used with --simulated-members: each member advertises its own client URL',
    ],
    [
      ['--simulated-members=10'],
      '--simulated-members 10 is too many: a simulated cluster has 1 to 9 members',
    ],
    [
      ['--listen-client-urls=http://127.0.0.1:1,http://127.0.0.1:2'],
      '--simulated-members takes one --listen-client-urls URL',
    ],
    [
      ['--listen-client-urls=http://0.0.0.0:2379'],
      'the simulated members listen on 127.0.0.1 only',
    ],
    [['--listen-client-urls=http://etcd.local:2379'], 'expected IP in URL for binding'],
    [['--listen-client-urls=https://127.0.0.1:2379'], 'TLS key/cert must be provided'],
    [['--listen-client-urls=http://127.0.0.1:65534'], 'needs ports up to 65536, above 65535'],
  ])('refuses %j as a configuration error', async (args, message) => {
    await expect(config(['--simulated-members=3', ...args])).rejects.toThrow(ConfigError);
    await expect(config(['--simulated-members=3', ...args])).rejects.toThrow(message);
  });

  it('names the variable of a refused flag that came from the environment', async () => {
    await expect(
      config(['--simulated-members=3'], { ETCD_DATA_DIR: '/var/lib/etcd' }),
    ).rejects.toThrow('ETCD_DATA_DIR (--data-dir) cannot be used with --simulated-members');
    await expect(config(['--simulated-members=3', '--data-dir='])).resolves.toBeDefined();
  });
});

describe('auto-compaction flags', () => {
  it('reads a bare number as hours (periodic) or revisions (revision), a duration as periodic', () => {
    expect(autoCompactionOf('periodic', '0')).toBeUndefined();
    expect(autoCompactionOf('periodic', '2')).toEqual({ mode: 'periodic', retentionMs: 7_200_000 });
    expect(autoCompactionOf('periodic', '30m')).toEqual({
      mode: 'periodic',
      retentionMs: 1_800_000,
    });
    expect(autoCompactionOf('revision', '1000')).toEqual({ mode: 'revision', retention: 1000 });
    expect(() => autoCompactionOf('revision', '5m')).toThrow('must be a number of revisions');
    expect(() => autoCompactionOf('periodic', '-1')).toThrow('invalid --auto-compaction-retention');
    expect(() => autoCompactionOf('daily', '1')).toThrow('unsupported --auto-compaction-mode');
  });
});

describe('minimum lease TTL from raft timing', () => {
  it("is etcd's: 1.5 election timeouts in whole heartbeats, rounded up to seconds", () => {
    expect(minLeaseTtl(100, 1000)).toBe(2);
    expect(minLeaseTtl(10, 100)).toBe(1);
    expect(minLeaseTtl(100, 2100)).toBe(4);
    expect(() => minLeaseTtl(100, 60_000)).toThrow('is too long');
  });
});

describe('parseGoDuration', () => {
  it.each([
    ['0', 0],
    ['10m', 600_000],
    ['1h30m', 5_400_000],
    ['1.5s', 1_500],
    ['250ms', 250],
    ['100us', 0.1],
    ['-2s', -2_000],
  ])('%s is %d ms', (text, ms) => {
    expect(parseGoDuration(text)).toBe(ms);
  });

  it.each(['', '10', 'm', '1x', '1h 2m', '.s'])('%j is not a duration', (text) => {
    expect(parseGoDuration(text)).toBeUndefined();
  });
});
