// Every runnable example, run as CI runs it: a child process with its own embedded server, which
// must end by itself with exit code 0 and print the line that shows it worked.
// `npx vitest run examples/test/examples.test.ts`.
import { type ChildProcess, spawn } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { freePort } from '@etcdkit/testkit';
import { describe, expect, test } from 'vitest';

const ROOT = fileURLToPath(new URL('../..', import.meta.url));

interface Run {
  readonly code: number | null;
  readonly output: string;
}

/** Starts an example the way `npm start` / `npm run example` do (TypeScript sources, no build). */
function start(file: string, args: readonly string[] = []): ChildProcess {
  return spawn(
    process.execPath,
    ['--conditions=etcdkit-source', '--import', 'tsx', `examples/src/${file}.ts`, ...args],
    { cwd: ROOT, stdio: ['ignore', 'pipe', 'pipe'] },
  );
}

function finished(
  child: ChildProcess,
  onOutput?: (output: string) => void,
  timeoutMs = 60_000,
): Promise<Run> {
  let output = '';
  const collect = (chunk: Buffer) => {
    output += chunk.toString();
    onOutput?.(output);
  };
  child.stdout?.on('data', collect);
  child.stderr?.on('data', collect);
  return new Promise((resolve, reject) => {
    const timer = setTimeout(() => {
      child.kill('SIGKILL');
      reject(new Error(`timed out; output so far:\n${output}`));
    }, timeoutMs);
    child.on('close', (code) => {
      clearTimeout(timer);
      resolve({ code, output });
    });
  });
}

const EXAMPLES: readonly { name: string; args?: string[]; shows: RegExp; timeoutMs?: number }[] = [
  {
    name: 'demo',
    shows: /REJECTED worker-\d's write: token \d+ < highest accepted \d+[\s\S]*demo OK/,
  },
  { name: 'lock-with-fencing', shows: /A's write REJECTED[\s\S]*lock-with-fencing OK/ },
  { name: 'stm-bank-transfer', args: ['--transfers', '60'], shows: /the total is preserved/ },
  { name: 'watch-informer', shows: /the cache matches a fresh read/ },
  {
    name: 'service-discovery',
    shows: /echo-2: registered again[\s\S]*echo-3: deregistered[\s\S]*service-discovery OK/,
  },
  {
    name: 'verify-critical-section',
    shows: /unfenced: \d+ operations, valid: false[\s\S]*REFUSED[\s\S]*verify-critical-section OK/,
  },
  {
    name: 'cluster-failover',
    shows: /no quorum, no leader[\s\S]*each once, in order[\s\S]*cluster-failover OK/,
  },
  {
    name: 'leader-election-service',
    args: ['--name', 'ci', '--duration', '700'],
    shows: /ci: leading[\s\S]*ci: resigned gracefully/,
  },
  {
    name: 'shared-counter',
    shows:
      /4 workers x 10 adds: counter 40 [\s\S]*each value 1\.\.40 written by exactly one add: true[\s\S]*compareAndSet\(0 -> 1000\): succeeded false, counter 40[\s\S]*compareAndSet\(40 -> 1000\): succeeded true, counter 1000[\s\S]*shared-counter OK/,
  },
  {
    name: 'leader-latch',
    shows:
      /leading: (node-\w)\n[\s\S]*\1: not leader[\s\S]*\1: closed: [\s\S]*leading: node-\w\n\1's latch: closed[\s\S]*leader-latch OK/,
  },
  {
    name: 'group-membership',
    shows:
      /view \[\]@\d+[\s\S]*change worker-2: slots:4 -> slots:8[\s\S]*leave {2}worker-3[\s\S]*view \[\]@\d+\ngroup-membership OK/,
  },
  {
    name: 'multi-lock',
    shows:
      /west names locks\/bob, locks\/alice; takes locks\/alice, locks\/bob[\s\S]*both services finished 5 rounds; total 200\nmulti-lock OK/,
  },
  {
    name: 'lock-delay',
    args: ['--delay', '1000'],
    shows:
      /C \(after B was lost\): holds[\s\S]*C waited at least the 1000 ms delay: true\nlock-delay OK/,
  },
  {
    name: 'delay-queue',
    shows:
      /took "in 0 ms"[\s\S]*took "in 400 ms"[\s\S]*took "in 800 ms"[\s\S]*took "in 1200 ms"[\s\S]*none early: true\ndelay-queue OK/,
  },
  {
    // Ten etcdkit supervisors, each a process with its watchdog and command: slower than the rest.
    name: 'run-exactly-one',
    shows:
      /exit statuses 0, 0, 0; at most 1 running at once[\s\S]*etcdkit exited with 79[\s\S]*at most [12] running at once[\s\S]*at most 1 leading at once\nrun-exactly-one OK/,
    timeoutMs: 180_000,
  },
];

describe('examples', () => {
  for (const example of EXAMPLES) {
    const timeoutMs = example.timeoutMs ?? 60_000;
    test(
      `${example.name} ends by itself with exit code 0`,
      async () => {
        const run = await finished(start(example.name, example.args), undefined, timeoutMs);
        expect(run.output).toMatch(example.shows);
        expect(run.code, run.output).toBe(0);
      },
      timeoutMs,
    );
  }

  test('leader-election-service resigns gracefully on SIGTERM', async () => {
    const child = start('leader-election-service', ['--name', 'svc']);
    let signalled = false;
    const run = await finished(child, (output) => {
      if (!signalled && output.includes('svc: wrote report 1')) {
        signalled = true;
        child.kill('SIGTERM');
      }
    });
    expect(run.output).toMatch(/svc: SIGTERM received[\s\S]*svc: resigned gracefully/);
    expect(run.code, run.output).toBe(0);
  }, 60_000);

  test('the demo names an unreachable endpoint in one line, within the dial timeout, exit 1', async () => {
    // A port nothing listens on: taken from the OS, then released.
    const endpoint = `http://127.0.0.1:${await freePort()}`;
    const run = await finished(start('demo', ['--endpoints', endpoint]));
    expect(run.output).toBe(
      `demo: cannot reach etcd at ${endpoint}: deadline exceeded: /etcdserverpb.KV/Range got no ` +
        `answer within its 5000 ms deadline (connecting to ${endpoint.slice('http://'.length)})\n`,
    );
    expect(run.code).toBe(1);
  }, 60_000);

  test.each([
    [['--endpoint', 'http://127.0.0.1:2379'], "Unknown option '--endpoint'"],
    [['--endpoints'], "Option '--endpoints <value>' argument missing"],
    [['--endpoints='], '--endpoints needs a URL'],
    [
      ['http://127.0.0.1:2379'],
      "Unexpected argument 'http://127.0.0.1:2379'. This command does not take positional arguments",
    ],
  ])('the demo refuses %j in one line and the usage, exit 2', async (args, message) => {
    const run = await finished(start('demo', args));
    expect(run.output).toBe(`demo: ${message}\nusage: demo [--endpoints http://host:port,...]\n`);
    expect(run.code).toBe(2);
  });

  test.each([
    [
      'lock-with-fencing',
      ['--bogus'],
      "Unknown option '--bogus'",
      '[--endpoints http://host:port,...]',
    ],
    [
      'watch-informer',
      ['--endpoints'],
      "Option '--endpoints <value>' argument missing",
      '[--endpoints http://host:port,...]',
    ],
    [
      'service-discovery',
      ['extra'],
      "Unexpected argument 'extra'. This command does not take positional arguments",
      '[--endpoints http://host:port,...]',
    ],
    [
      'stm-bank-transfer',
      ['--transfer', '5'],
      "Unknown option '--transfer'",
      '[--endpoints http://host:port,...] [--transfers count]',
    ],
    [
      'leader-election-service',
      ['--endpoints='],
      '--endpoints needs a URL',
      '[--endpoints http://host:port,...] [--name name] [--duration ms]',
    ],
    ['cluster-failover', ['--members', '5'], "Unknown option '--members'", ''],
  ])(
    '%s refuses %j in one line and the usage, exit 2, like the demo',
    async (name, args, message, flags) => {
      const run = await finished(start(name, args));
      expect(run.output).toBe(`${name}: ${message}\nusage: ${name}${flags ? ` ${flags}` : ''}\n`);
      expect(run.code).toBe(2);
    },
  );

  test.each([
    ['stm-bank-transfer', ['--transfers', 'many'], '--transfers must be a number >= 0, got "many"'],
    ['leader-election-service', ['--duration=-1'], '--duration must be a number >= 0, got "-1"'],
  ])('%s refuses a flag value %j that is not a number, exit 2', async (name, args, message) => {
    const run = await finished(start(name, args));
    expect(run.output).toBe(`${name}: ${message}\n`);
    expect(run.code).toBe(2);
  });

  test('npm run example passes the flags on, refused the same way', async () => {
    const run = await finished(start('example', ['watch-informer', '--bogus']));
    expect(run.output).toBe(
      "watch-informer: Unknown option '--bogus'\nusage: watch-informer [--endpoints http://host:port,...]\n",
    );
    expect(run.code).toBe(2);
  });

  test('npm run example without a name lists the examples', async () => {
    const run = await finished(start('example'));
    expect(run.output).toMatch(/examples: .*lock-with-fencing/);
    expect(run.code).toBe(0);
  });
});
