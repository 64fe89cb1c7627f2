// etcdctl against etcdkit-server and against a real etcd: the same command sequence on a fresh
// server of each kind must print the same thing, once ids, ports, versions and sizes that
// legitimately differ are replaced by placeholders (see etcdctl.ts). etcdctl is
// ETCDKIT_ETCDCTL_BIN or `etcdctl` on PATH (etcd 3.4's in CI); the real etcd comes from the testkit.
import {
  type EtcdProcess,
  findEtcdBinary,
  makeTestCertificates,
  requireEtcdBinary,
  startEtcd,
  type TestCertificates,
} from '@etcdkit/testkit';
import { afterEach, describe, expect, it } from 'vitest';
import { etcdVersionTraits, parseEtcdVersion } from '../../src/etcd-version.js';
import { type CliProcess, startCli, stopAllCliProcesses } from './cli-process.js';
import {
  type CtlResult,
  etcdctl,
  etcdctlVersion,
  learnId,
  normalise,
  type ServerFacts,
} from './etcdctl.js';

type Vars = Record<string, string>;

/** One etcdctl command of a scenario. */
interface Step {
  readonly args: readonly string[] | ((vars: Vars) => readonly string[]);
  readonly stdin?: string;
  /** For commands that never end by themselves (watch, elect, lock): stop this long after their first output. */
  readonly stopAfterMs?: number;
  /** Reads what later steps need (a lease id) from the output. */
  readonly learn?: (result: CtlResult, facts: ServerFacts, vars: Vars) => void;
  /** Another command started first and running alongside (a lock holder, a campaigning leader). */
  readonly during?: { readonly args: readonly string[]; readonly stopAfterMs: number };
}

const ctlVersion = etcdctlVersion();
const etcdLookup = findEtcdBinary();
const skipReason =
  ctlVersion === undefined
    ? 'etcdctl cannot be run (set ETCDKIT_ETCDCTL_BIN)'
    : etcdLookup.found
      ? undefined
      : `no real etcd to compare with: ${etcdLookup.reason}`;

/** The raft timing the testkit gives a real etcd, so that both have a 1 s minimum lease TTL. */
const TIMING = ['--heartbeat-interval', '10', '--election-timeout', '100'];
const NAME = 'etcdkit';

async function learnMember(facts: ServerFacts, vars: Vars): Promise<void> {
  const { stdout } = await etcdctl(facts.endpoint, ['member', 'list', '-w', 'json'], {
    globalArgs: facts.globalArgs,
  });
  const cluster = /"cluster_id":(\d+)/.exec(stdout)?.[1];
  const member = /"member_id":(\d+)/.exec(stdout)?.[1];
  if (cluster === undefined || member === undefined) {
    throw new Error(`member list gave no ids: ${stdout}`);
  }
  learnId(facts, BigInt(cluster), 'cluster');
  learnId(facts, BigInt(member), 'member');
  vars.member = BigInt(member).toString(16);
}

/** Runs the steps against one server; returns one comparable transcript entry per step. */
async function transcript(facts: ServerFacts, steps: readonly Step[]): Promise<string[]> {
  const vars: Vars = {};
  await learnMember(facts, vars);
  const lines: string[] = [];
  for (const step of steps) {
    const args = typeof step.args === 'function' ? step.args(vars) : step.args;
    let printed: () => void = () => {};
    const headStart = new Promise<void>((resolve) => {
      printed = resolve;
    });
    const during =
      step.during === undefined
        ? undefined
        : etcdctl(facts.endpoint, step.during.args, {
            stopAfterMs: step.during.stopAfterMs,
            globalArgs: facts.globalArgs,
            onFirstOutput: printed,
          });
    // The step's own command starts once the one alongside holds the lock or leads (its first
    // output), or has ended.
    if (during !== undefined) await Promise.race([headStart, during]);
    const result = await etcdctl(facts.endpoint, args, {
      globalArgs: facts.globalArgs,
      ...(step.stdin === undefined ? {} : { stdin: step.stdin }),
      ...(step.stopAfterMs === undefined ? {} : { stopAfterMs: step.stopAfterMs }),
    });
    step.learn?.(result, facts, vars);
    if (during !== undefined) {
      const alongside = await during;
      lines.push(
        normalise(
          `$ etcdctl ${step.during!.args.join(' ')} &\n[${alongside.code}]\n${alongside.stdout}${alongside.stderr}`,
          facts,
        ),
      );
    }
    lines.push(
      normalise(
        `$ etcdctl ${args.join(' ')}\n[${result.code}]\n${result.stdout}${result.stderr}`,
        facts,
      ),
    );
  }
  return lines;
}

/** Runs `steps` on a fresh etcdkit-server and a fresh real etcd; returns both transcripts. */
async function onBoth(
  steps: readonly Step[],
  tidy: (text: string) => string = (text) => text,
  certs?: TestCertificates,
): Promise<{ embedded: string[]; etcd: string[] }> {
  let cli: CliProcess | undefined;
  let real: EtcdProcess | undefined;
  // With certificates: mutual TLS on both servers, and etcdctl presenting the client certificate.
  const serverTls =
    certs === undefined
      ? []
      : ['--cert-file', certs.server.certFile, '--key-file', certs.server.keyFile].concat([
          '--trusted-ca-file',
          certs.ca.certFile,
          '--client-cert-auth',
        ]);
  const globalArgs =
    certs === undefined
      ? []
      : [
          `--cacert=${certs.ca.certFile}`,
          `--cert=${certs.client.certFile}`,
          `--key=${certs.client.keyFile}`,
        ];
  // etcdkit-server answers as the version of the real etcd it is compared with.
  const answersAs = etcdVersionTraits(parseEtcdVersion(requireEtcdBinary().version));
  try {
    [cli, real] = await Promise.all([
      startCli(['--name', NAME, '--etcd-version', answersAs.version, ...TIMING, ...serverTls], {
        scheme: certs === undefined ? 'http' : 'https',
      }),
      startEtcd({
        name: NAME,
        ...(certs === undefined ? {} : { tls: certs.etcdTls({ clientCertAuth: true }) }),
      }),
    ]);
    const embeddedFacts: ServerFacts = {
      endpoint: cli.endpoint,
      globalArgs,
      version: answersAs.release,
      peerUrls: ['http://localhost:2380'],
      ids: new Map(),
    };
    const etcdFacts: ServerFacts = {
      endpoint: real.endpoint,
      globalArgs,
      version: real.version,
      peerUrls: [`http://127.0.0.1:${real.peerPort}`],
      ids: new Map(),
    };
    const [embedded, etcd] = await Promise.all([
      transcript(embeddedFacts, steps),
      transcript(etcdFacts, steps),
    ]);
    // ETCDKIT_SHOW_TRANSCRIPTS=1 prints what is compared, to see what a scenario exercises.
    if (process.env.ETCDKIT_SHOW_TRANSCRIPTS === '1') {
      console.log(
        `embedded:\n${embedded.map(tidy).join('\n')}\netcd:\n${etcd.map(tidy).join('\n')}`,
      );
    }
    return { embedded: embedded.map(tidy), etcd: etcd.map(tidy) };
  } finally {
    await Promise.all([stopCli(cli), real?.stop()]);
  }
}

async function stopCli(cli: CliProcess | undefined): Promise<void> {
  if (cli === undefined) return;
  cli.child.kill('SIGTERM');
  await cli.exited;
}

const learnLease =
  (name: string) =>
  (result: CtlResult, facts: ServerFacts, vars: Vars): void => {
    const hex = /lease ([0-9a-f]+) granted/.exec(result.stdout)?.[1];
    const decimal = /"ID":(\d+)/.exec(result.stdout)?.[1];
    const id =
      hex !== undefined ? BigInt(`0x${hex}`) : decimal !== undefined ? BigInt(decimal) : undefined;
    if (id === undefined) throw new Error(`no lease id in ${result.stdout}${result.stderr}`);
    learnId(facts, id, name);
    vars[name] = id.toString(16);
  };

/** Session leases of lock and elect are etcdctl's own: any hex id in their keys is one. */
const anySessionLease = (text: string): string =>
  text.replace(/\/[0-9a-f]{8,16}\b/g, '/<session-lease>');

/** Seconds left read a moment apart on two servers may differ by one: keep only "about 600". */
const aboutTenMinutes = (text: string): string =>
  text
    .replace(/remaining\((59[5-9]|600)s\)/g, 'remaining(~600s)')
    .replace(/"(TTL|ttl)":(59[5-9]|600)\b/g, '"$1":~600');

const puts = (...pairs: [string, string][]): Step[] =>
  pairs.map(([k, v]) => ({ args: ['put', k, v] }));

describe.skipIf(skipReason !== undefined)(
  `etcdctl ${ctlVersion ?? ''} against etcdkit-server and a real etcd${skipReason === undefined ? '' : ` (skipped: ${skipReason})`}`,
  () => {
    afterEach(stopAllCliProcesses);

    it('put and get with every flag', async () => {
      const { embedded, etcd } = await onBoth([
        ...puts(['a', '1'], ['ab', '2'], ['abc', '3'], ['b', '4'], ['c', '5'], ['a', '10']),
        { args: ['put', 'ab', '20', '--prev-kv'] },
        { args: ['put', 'b', '40', '-w', 'json'] },
        { args: ['put', 'a', '--ignore-value'] },
        { args: ['put', 'missing', '--ignore-value'] },
        { args: ['get', 'a'] },
        { args: ['get', 'a', '--prefix'] },
        { args: ['get', 'a', '--prefix', '--limit=2'] },
        { args: ['get', 'ab', '--from-key'] },
        { args: ['get', 'a', 'b'] },
        { args: ['get', '', '--prefix', '--keys-only'] },
        { args: ['get', 'a', '--prefix', '--count-only'] },
        { args: ['get', 'a', '--prefix', '--print-value-only'] },
        { args: ['get', 'a', '--prefix', '--order=DESCEND'] },
        { args: ['get', 'a', '--prefix', '--sort-by=VALUE', '--order=DESCEND'] },
        { args: ['get', '', '--from-key', '--sort-by=MODIFY', '--order=DESCEND'] },
        { args: ['get', '', '--from-key', '--sort-by=CREATE', '--order=ASCEND', '--limit=3'] },
        { args: ['get', 'a', '--prefix', '--sort-by=VERSION', '--order=DESCEND', '--limit=1'] },
        { args: ['get', 'a', '--rev=2'] },
        { args: ['get', 'a', '--prefix', '--rev=4'] },
        { args: ['get', 'a', '--consistency=s'] },
        { args: ['get', 'a', '--prefix', '--limit=2', '-w', 'json'] },
        { args: ['get', 'a', '--prefix', '--keys-only', '-w', 'json'] },
        { args: ['get', 'a', '--prefix', '--count-only', '-w', 'json'] },
        { args: ['get', 'a', '-w', 'fields'] },
        { args: ['get', 'a', '--rev=100'] },
        { args: ['get', 'nothing'] },
        { args: ['get', '', '--prefix', '-w', 'json', '--rev=1'] },
      ]);
      expect(embedded).toEqual(etcd);
    });

    it('del with a range, --prefix, --from-key and --prev-kv', async () => {
      const { embedded, etcd } = await onBoth([
        ...puts(['a', '1'], ['ab', '2'], ['b', '3'], ['c', '4'], ['d', '5'], ['e', '6']),
        { args: ['del', 'a'] },
        { args: ['del', 'nothing'] },
        { args: ['del', 'a', '--prefix', '--prev-kv'] },
        { args: ['del', 'b', 'c'] },
        { args: ['del', 'd', '--from-key', '--prev-kv', '-w', 'json'] },
        { args: ['get', '', '--prefix'] },
        { args: ['put', 'f', '7', '-w', 'json'] },
      ]);
      expect(embedded).toEqual(etcd);
    });

    it('txn from stdin: both branches, every compare kind, json output', async () => {
      const { embedded, etcd } = await onBoth([
        ...puts(['a', '1'], ['b', '2']),
        {
          args: ['txn'],
          stdin:
            'mod("a") > "0"\nvalue("b") = "2"\n\nput a after\nget b\ndel nothing\n\nput a failed\n\n',
        },
        {
          args: ['txn', '-w', 'json'],
          stdin: 'create("x") != "0"\n\nput x never\n\nput x created\nget a --prefix\n\n',
        },
        {
          args: ['txn'],
          stdin: 'version("a") = "2"\nvalue("x") < "d"\n\ndel a --prev-kv\nget x\n\nget b\n\n',
        },
        { args: ['txn'], stdin: 'bogus("a") = "1"\n\n\n\n' },
        { args: ['get', '', '--prefix'] },
      ]);
      expect(embedded).toEqual(etcd);
    });

    it('watch with history, --prev-kv and json, stopped after it printed', async () => {
      const { embedded, etcd } = await onBoth([
        ...puts(['k1', 'v1'], ['k2', 'v2'], ['k1', 'v3']),
        { args: ['del', 'k2'] },
        { args: ['put', 'k3', 'v4'] },
        { args: ['watch', '--rev=1', 'k', '--prefix'], stopAfterMs: 1_500 },
        { args: ['watch', '--rev=3', 'k1', '--prev-kv'], stopAfterMs: 1_000 },
        { args: ['watch', '--rev=2', 'k', 'k3', '-w', 'json'], stopAfterMs: 1_000 },
        { args: ['watch', '--rev=4', 'k2', '--prev-kv', '-w', 'json'], stopAfterMs: 1_000 },
      ]);
      expect(embedded).toEqual(etcd);
    });

    it('lease grant, keep-alive --once, timetolive --keys, list and revoke', async () => {
      const { embedded, etcd } = await onBoth(
        [
          // One key per lease and one lease at a time where lists are printed: etcd lists a
          // lease's keys and its leases in map order, which varies from run to run.
          { args: ['lease', 'grant', '600'], learn: learnLease('lease1') },
          { args: (v) => ['put', 'k', 'v', `--lease=${v.lease1}`] },
          { args: (v) => ['lease', 'timetolive', v.lease1!, '--keys'] },
          { args: (v) => ['lease', 'timetolive', v.lease1!, '--keys', '-w', 'json'] },
          { args: (v) => ['lease', 'keep-alive', '--once', v.lease1!] },
          { args: ['lease', 'list'] },
          { args: ['lease', 'grant', '1', '-w', 'json'], learn: learnLease('lease2') },
          { args: (v) => ['lease', 'revoke', v.lease1!] },
          { args: ['get', 'k', '--prefix'] },
          { args: (v) => ['lease', 'timetolive', v.lease1!] },
          { args: (v) => ['lease', 'revoke', v.lease1!] },
          { args: (v) => ['put', 'k', 'v', `--lease=${v.lease1}`] },
          { args: ['put', 'k', 'v', '--lease=1234abcd'] },
        ],
        aboutTenMinutes,
      );
      expect(embedded).toEqual(etcd);
    });

    it('compaction, reads around it, and equal hashes of equal histories', async () => {
      const { embedded, etcd } = await onBoth([
        ...puts(['a', '1'], ['a', '2'], ['a', '3'], ['b', '1']),
        { args: ['compaction', '3'] },
        { args: ['get', 'a', '--rev=2'] },
        { args: ['get', 'a', '--rev=3'] },
        { args: ['compaction', '3'] },
        { args: ['compaction', '10'] },
        { args: ['compaction', '--physical', '4'] },
        { args: ['watch', '--rev=2', 'a'], stopAfterMs: 1_000 },
        { args: ['endpoint', 'hashkv'] },
        { args: ['endpoint', 'hashkv', '-w', 'json'] },
      ]);
      expect(embedded).toEqual(etcd);
    });

    it('member list, endpoint status and health, alarm list and disarm, defrag, move-leader', async () => {
      const { embedded, etcd } = await onBoth([
        { args: ['put', 'a', '1'] },
        { args: ['member', 'list'] },
        { args: ['member', 'list', '-w', 'json'] },
        { args: ['member', 'list', '-w', 'table'] },
        { args: ['endpoint', 'health'] },
        { args: ['endpoint', 'status'] },
        { args: ['endpoint', 'status', '-w', 'json'] },
        { args: ['endpoint', 'status', '--cluster', '-w', 'table'] },
        { args: ['alarm', 'list'] },
        { args: ['alarm', 'disarm'] },
        { args: ['defrag'] },
        { args: (v) => ['move-leader', v.member!] },
        { args: ['move-leader', '1234'] },
        { args: ['endpoint', 'status', '-w', 'json'] },
      ]);
      expect(embedded).toEqual(etcd);
    });

    it('lock runs a command while holding the lock, and holds it until stopped', async () => {
      const { embedded, etcd } = await onBoth(
        [
          { args: ['lock', 'jobs', 'echo', 'holding the lock'] },
          { args: ['lock', 'jobs'], stopAfterMs: 1_500 },
          { args: ['get', 'jobs', '--prefix', '--keys-only'] },
          // Waits for the holder, which lets go when it is stopped.
          {
            args: ['lock', 'jobs', 'echo', 'after the holder'],
            during: { args: ['lock', 'jobs'], stopAfterMs: 2_000 },
          },
        ],
        anySessionLease,
      );
      expect(embedded).toEqual(etcd);
    });

    it('elect campaigns and proclaims, elect -l observes the leader', async () => {
      const { embedded, etcd } = await onBoth(
        [
          { args: ['elect', 'leader', 'node-a'], stopAfterMs: 1_500 },
          { args: ['get', 'leader', '--prefix'] },
          {
            args: ['elect', '-l', 'leader'],
            stopAfterMs: 1_000,
            during: { args: ['elect', 'leader', 'node-b'], stopAfterMs: 2_500 },
          },
          {
            args: ['elect', 'leader', 'node-c'],
            stopAfterMs: 3_000,
            during: { args: ['elect', 'leader', 'node-d'], stopAfterMs: 1_500 },
          },
        ],
        anySessionLease,
      );
      expect(embedded).toEqual(etcd);
    });

    it('over mutual TLS: kv, watch, lease, maintenance and cluster calls', async () => {
      const certs = await makeTestCertificates();
      try {
        const { embedded, etcd } = await onBoth(
          [
            { args: ['put', 'a', '1'] },
            { args: ['get', 'a', '-w', 'json'] },
            { args: ['watch', '--rev=1', 'a'], stopAfterMs: 1_000 },
            { args: ['lease', 'grant', '600'], learn: learnLease('lease1') },
            { args: (v) => ['lease', 'revoke', v.lease1!] },
            { args: ['member', 'list'] },
            { args: ['endpoint', 'health'] },
            { args: ['endpoint', 'status', '-w', 'json'] },
            { args: ['endpoint', 'hashkv'] },
          ],
          (text) => text,
          certs,
        );
        expect(embedded).toEqual(etcd);
      } finally {
        await certs.remove();
      }
    });
  },
);
