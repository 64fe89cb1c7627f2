// The command line: etcdctl's flags and ETCDCTL_* variables, each command's forms, and the usage
// errors (status 64) for what does not parse.
import { mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { parseInvocation } from '../src/args.js';
import { etcdOptions } from '../src/connection-flags.js';
import { CliError } from '../src/errors.js';
import { EXIT_STATUS } from '../src/exit-status.js';

const parse = (argv: readonly string[], env: NodeJS.ProcessEnv = {}) => parseInvocation(argv, env);

function usageErrorOf(argv: readonly string[]): CliError {
  try {
    parse(argv);
  } catch (error) {
    if (error instanceof CliError) return error;
    throw error;
  }
  throw new Error(`${argv.join(' ')} parsed`);
}

describe('etcdkit command line', () => {
  it('parses lock with its flags, CMD after --', () => {
    expect(
      parse([
        'lock',
        '--ttl=5',
        '--wait-timeout',
        '1m',
        '--kill-grace=0.5',
        'jobs',
        '--',
        'sh',
        '-c',
        'x',
      ]),
    ).toEqual({
      kind: 'lock',
      connection: {},
      name: 'jobs',
      hold: { ttlSeconds: 5, waitTimeoutMs: 60_000, killGraceMs: 500 },
      command: ['sh', '-c', 'x'],
    });
  });

  it("takes etcdctl's lock form without -- and the defaults: TTL 10, grace TTL/6, no wait limit", () => {
    const invocation = parse(['lock', 'jobs', 'echo', 'hi']);
    expect(invocation).toMatchObject({
      kind: 'lock',
      command: ['echo', 'hi'],
      hold: { ttlSeconds: 10, waitTimeoutMs: undefined, killGraceMs: 10_000 / 6 },
    });
    expect(parse(['lock', 'jobs'])).toMatchObject({ kind: 'lock', command: [] });
  });

  it('reads ETCDCTL_* variables, a flag winning over its variable', () => {
    const env = {
      ETCDCTL_ENDPOINTS: 'a:1,b:2',
      ETCDCTL_USER: 'root:secret',
      ETCDCTL_DIAL_TIMEOUT: '3s',
    };
    const fromEnv = parse(['lock', 'n'], env);
    expect(fromEnv.kind === 'lock' && etcdOptions(fromEnv.connection)).toEqual({
      endpoints: ['http://a:1', 'http://b:2'],
      dialTimeoutMs: 3000,
      auth: { username: 'root', password: 'secret' },
    });
    const fromFlags = parse(
      ['--endpoints=c:3', 'lock', '--user', 'u', '--password', 'p', 'n'],
      env,
    );
    expect(fromFlags.kind === 'lock' && etcdOptions(fromFlags.connection)).toEqual({
      endpoints: ['http://c:3'],
      dialTimeoutMs: 3000,
      auth: { username: 'u', password: 'p' },
    });
  });

  it('uses TLS for bare host:port endpoints when a CA or certificate is given, as etcdctl', () => {
    const dir = mkdtempSync(join(tmpdir(), 'etcdkit-cli-args-'));
    try {
      writeFileSync(join(dir, 'ca.pem'), 'CA PEM');
      const invocation = parse([
        'lock',
        `--cacert=${join(dir, 'ca.pem')}`,
        '--endpoints=h:2379',
        'n',
      ]);
      expect(invocation.kind === 'lock' && etcdOptions(invocation.connection)).toEqual({
        endpoints: ['https://h:2379'],
        dialTimeoutMs: 2000,
        tls: { ca: 'CA PEM', cert: undefined, key: undefined },
      });
      const missing = parse(['lock', `--cacert=${join(dir, 'none.pem')}`, 'n']);
      expect(() => missing.kind === 'lock' && etcdOptions(missing.connection)).toThrow(
        expect.objectContaining({ code: 'TLS_FILE', exitStatus: EXIT_STATUS.usage }),
      );
    } finally {
      rmSync(dir, { recursive: true, force: true });
    }
  });

  it("parses elect's forms: a command, etcdctl's proposal, -l", () => {
    expect(parse(['elect', '--restart', '--value=v', 'e', '--', 'd'])).toMatchObject({
      kind: 'elect',
      value: 'v',
      restart: true,
      listen: false,
      command: ['d'],
      hold: { ttlSeconds: 60 },
    });
    expect(parse(['elect', 'e', 'proposal'])).toMatchObject({ value: 'proposal', command: [] });
    expect(parse(['elect', '-l', 'e'])).toMatchObject({ listen: true, value: undefined });
  });

  it('parses semaphore with --limit', () => {
    expect(parse(['semaphore', '--limit', '3', 's', '--', 'job'])).toMatchObject({
      kind: 'semaphore',
      limit: 3,
      command: ['job'],
    });
  });

  it('answers --help for etcdkit and each command', () => {
    expect(parse([])).toEqual({ kind: 'help', topic: undefined });
    expect(parse(['--help'])).toEqual({ kind: 'help', topic: undefined });
    expect(parse(['elect', '-h'])).toEqual({ kind: 'help', topic: 'elect' });
  });

  it.each([
    [['unlock', 'n'], 'unknown command'],
    [['lock'], 'takes a NAME'],
    [['lock', '--limit=2', 'n'], 'has no --limit'],
    [['lock', '--ttl=0', 'n'], '--ttl'],
    [['lock', '--ttl=2.5', 'n'], '--ttl'],
    [['lock', '--ttl=10', '--kill-grace=8', 'n'], 'does not fit'],
    [['lock', '--wait-timeout=soon', 'n'], 'not a duration'],
    [['lock', '--bogus', 'n'], "Unknown option '--bogus'"],
    [['semaphore', 's', '--', 'x'], 'needs --limit'],
    [['semaphore', '--limit=0', 's', '--', 'x'], 'positive integer'],
    [['semaphore', '--limit=2', 's', 'x'], 'after --'],
    [['elect', 'e'], 'needs a proposal'],
    [['elect', '-l', 'e', 'p'], 'only observes'],
    [['elect', '--restart', 'e', 'p'], '--restart needs a command'],
    [['elect', '--value=v', 'e', 'p'], 'at most one proposal'],
  ])('refuses %j: %s', (argv, message) => {
    const error = usageErrorOf(argv);
    expect(error.code).toBe('USAGE');
    expect(error.exitStatus).toBe(EXIT_STATUS.usage);
    expect(error.message).toContain(message);
  });

  it('refuses --user without a password, and a password given twice', () => {
    const noPassword = parse(['lock', '--user=root', 'n']);
    expect(() => noPassword.kind === 'lock' && etcdOptions(noPassword.connection)).toThrow(
      /needs a password/,
    );
    const twice = parse(['lock', '--user=root:a', '--password=b', 'n']);
    expect(() => twice.kind === 'lock' && etcdOptions(twice.connection)).toThrow(
      /must not be set too/,
    );
  });
});
