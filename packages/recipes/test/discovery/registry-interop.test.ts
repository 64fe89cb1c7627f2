// ServiceRegistry against etcd's Go naming packages, both ways: the keys and JSON that etcdctl
// reads and writes, and, where Go is installed, a Go program (test/go/naming-interop) built
// against etcd's clientv3/naming/endpoints and its gRPC resolver (GOPATH mode, offline).
import {
  type ChildProcessWithoutNullStreams,
  execFile,
  spawn,
  spawnSync,
} from 'node:child_process';
import { existsSync, mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { Etcd } from '@etcdkit/client';
import { describeEachBackend } from '@etcdkit/testkit';
import { afterAll, afterEach, beforeAll, describe, expect, it } from 'vitest';
import type { ServiceDiscovery } from '../../src/discovery/discovery.js';
import { encodeEndpoint } from '../../src/discovery/endpoint.js';
import { ServiceRegistry } from '../../src/discovery/registry.js';
import { EtcdctlProcess, eventually } from '../recipes-support.js';

const run = promisify(execFile);
const RETRY = { minDelayMs: 50, maxDelayMs: 200 };
const GOPATH = process.env.ETCDKIT_GOPATH ?? '/usr/share/gocode';
const GO_SOURCE = fileURLToPath(new URL('./go/naming-interop', import.meta.url));

/** Why the Go half cannot run here, or undefined when it can. */
function goUnavailable(): string | undefined {
  const version = spawnSync('go', ['version'], { encoding: 'utf8' });
  if (version.status !== 0) return 'go is not installed (Debian: golang-go)';
  if (!existsSync(join(GOPATH, 'src/go.etcd.io/etcd/clientv3/naming/endpoints'))) {
    return `etcd's Go sources are not in ${GOPATH} (Debian: golang-etcd-server-dev)`;
  }
  return undefined;
}

describeEachBackend('service registry interop', ({ backend, prefix }) => {
  let admin: Etcd;
  let client: Etcd;
  const closing: Array<{ close(): Promise<void> }> = [];
  beforeAll(() => {
    admin = new Etcd({ endpoints: backend().endpoints });
    client = new Etcd({ endpoints: backend().endpoints });
  });
  afterEach(async () => {
    for (const thing of closing.splice(0).reverse()) await thing.close().catch(() => {});
  });
  afterAll(async () => {
    await client?.close();
    await admin?.close();
  });

  function registry(ttl = 5): ServiceRegistry {
    const created = new ServiceRegistry(client, { ttl, retry: RETRY });
    closing.push(created);
    return created;
  }

  async function discover(service: string): Promise<ServiceDiscovery> {
    const discovery = registry().discover(service);
    closing.push(discovery);
    await discovery.synced;
    return discovery;
  }

  /** Runs etcdctl once against the backend; resolves with its output lines. */
  async function etcdctl(...args: string[]): Promise<string[]> {
    const { stdout } = await run(
      process.env.ETCDKIT_ETCDCTL_BIN ?? 'etcdctl',
      ['--endpoints', backend().endpoints.join(','), ...args],
      { env: { ...process.env, ETCDCTL_API: '3' } },
    );
    return stdout.split('\n').filter((line) => line !== '');
  }

  describe('with etcdctl', () => {
    it('etcdctl reads the exact key and JSON of a registration, attached to its lease', async () => {
      const service = `${prefix()}api`;
      const registration = await registry().register(service, {
        addr: '127.0.0.1:9000',
        metadata: { version: '1.2', weight: 3 },
      });
      expect(await etcdctl('get', '--prefix', `${service}/`)).toEqual([
        `${service}/127.0.0.1:9000`,
        '{"Op":0,"Addr":"127.0.0.1:9000","Metadata":{"version":"1.2","weight":3}}',
      ]);
      const lease = registration.leaseId!.toString(16);
      const [alive] = await etcdctl('lease', 'timetolive', lease, '--keys');
      expect(alive).toMatch(
        new RegExp(
          // etcdctl prints the id as %016x (printer_simple.go): zero-padded to 16 digits.
          `^lease ${lease.padStart(16, '0')} granted with TTL\\(5s\\), .*attached keys\\(\\[${service}/127\\.0\\.0\\.1:9000\\]\\)$`,
        ),
      );
    });

    it("discovers what etcdctl writes in the form of etcd's gRPC naming guide, and its deletion", async () => {
      const service = `${prefix()}api`;
      const discovery = await discover(service);
      const [granted] = await etcdctl('lease', 'grant', '30');
      const lease = /^lease ([0-9a-f]+) granted/.exec(granted ?? '')?.[1] ?? '';
      await etcdctl('put', `${service}/1.2.3.4`, '{"Addr":"1.2.3.4","Metadata":"..."}');
      await etcdctl('put', '--lease', lease, `${service}/b`, '{"Op":0,"Addr":"5.6.7.8:80"}');
      await eventually(() => discovery.instances.length === 2);
      expect(discovery.instances.map((i) => [i.id, i.addr, i.metadata, i.leaseId])).toEqual([
        ['1.2.3.4', '1.2.3.4', '...', 0n],
        ['b', '5.6.7.8:80', null, BigInt(`0x${lease}`)],
      ]);
      await etcdctl('del', `${service}/1.2.3.4`);
      await etcdctl('lease', 'revoke', lease);
      await eventually(() => discovery.instances.length === 0);
    });
  });

  const unavailable = goUnavailable();
  describe("with Go's endpoints.Manager and gRPC resolver", () => {
    if (unavailable !== undefined) {
      it.skip(`skipped: ${unavailable}`, () => {});
      return;
    }
    let binary: string;
    let buildDir: string;
    const children: ChildProcessWithoutNullStreams[] = [];
    beforeAll(async () => {
      buildDir = mkdtempSync(join(tmpdir(), 'etcdkit-naming-interop-'));
      binary = join(buildDir, 'naming-interop');
      await run('go', ['build', '-o', binary, '.'], {
        cwd: GO_SOURCE,
        env: { ...process.env, GO111MODULE: 'off', GOPATH, GOFLAGS: '' },
      });
    }, 240_000);
    afterEach(async () => {
      for (const child of children.splice(0)) {
        if (child.exitCode === null && child.signalCode === null) {
          child.kill('SIGKILL');
          await new Promise((resolve) => child.once('exit', resolve));
        }
      }
    });
    afterAll(() => rmSync(buildDir, { recursive: true, force: true }));

    function go(...args: string[]): EtcdctlProcess {
      const child = spawn(binary, [args[0]!, backend().endpoints.join(','), ...args.slice(1)], {
        stdio: 'pipe',
      });
      children.push(child);
      return new EtcdctlProcess(child);
    }

    it("a Go endpoints.Manager registration is discovered, with Go's exact bytes, until Go deregisters", async () => {
      const service = `${prefix()}api`;
      const discovery = await discover(service);
      const metadata = { version: '1.2', weight: 3 };
      const goSide = go(
        'register',
        service,
        'go-1',
        '127.0.0.1:9001',
        JSON.stringify(metadata),
        '5',
      );
      const [line] = await goSide.waitForLines(1);
      const [, key, leaseHex] = line!.split(' ');
      expect(key).toBe(`${service}/go-1`);
      await eventually(() => discovery.instances.length === 1);
      expect(discovery.get('go-1')).toMatchObject({
        key,
        addr: '127.0.0.1:9001',
        metadata,
        leaseId: BigInt(`0x${leaseHex}`),
      });
      // Go writes the very bytes this registry writes for the same endpoint.
      expect((await admin.get(key!))?.text()).toBe(
        encodeEndpoint({ addr: '127.0.0.1:9001', metadata }),
      );
      goSide.child.kill('SIGTERM');
      expect(await goSide.waitForLines(2)).toEqual([line, 'deregistered']);
      await eventually(() => discovery.instances.length === 0);
    });

    it("Go's gRPC resolver resolves TypeScript registrations, through a lease loss and the close", async () => {
      const service = `${prefix()}api`;
      const r = registry(3);
      const a = await r.register(service, { addr: '10.0.0.1:80', metadata: { zone: 'a' } });
      await r.register(service, { addr: '10.0.0.2:80' });
      const both =
        '[{"Addr":"10.0.0.1:80","Metadata":{"zone":"a"}},{"Addr":"10.0.0.2:80","Metadata":null}]';
      const only1 = '[{"Addr":"10.0.0.1:80","Metadata":{"zone":"a"}}]';
      const only2 = '[{"Addr":"10.0.0.2:80","Metadata":null}]';
      const resolver = go('resolve', service);
      expect(await resolver.waitForLines(1)).toEqual([both]);

      // The registry's lease is lost: Go sees both instances go (one revision), then each come
      // back under the new lease.
      const recovered = new Promise((resolve) => a.once('registered', resolve));
      await admin.lease.revoke(a.leaseId!);
      await recovered;
      await eventually(() => resolver.lines.at(-1) === both && resolver.lines.length > 2);
      expect(resolver.lines.slice(2, -1).every((l) => [only1, only2].includes(l))).toBe(true);
      expect(resolver.lines[1]).toBe('[]');

      const seen = resolver.lines.length;
      await r.close();
      // Both keys go in one revision: the resolver reports the empty set once.
      expect((await resolver.waitForLines(seen + 1)).at(-1)).toBe('[]');
    });
  });
});
