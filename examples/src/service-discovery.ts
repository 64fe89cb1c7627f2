// Service discovery: servers register, a client discovers them and balances its requests.
//
//   npm run example -- service-discovery [--endpoints http://127.0.0.1:2379]
//
// Three HTTP "echo" servers register under `services/echo` with a ServiceRegistry (the key and
// JSON of etcd's Go naming packages, so a Go gRPC resolver would find them too). A client follows
// the live set with `discover()` and sends its requests round-robin. Then one server loses its
// lease (revoked from outside, as an expiry would) and registers again under a new one by itself,
// and another shuts down, deregistering first: the client stops sending to it without a failure.
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Etcd } from '@etcdkit/client';
import { type ServiceInstance, ServiceRegistry } from '@etcdkit/recipes';
import { commandLine, connect, ENDPOINTS_FLAG } from './support.js';

const SERVICE = 'services/echo';

/** One server: an HTTP listener and its registration. */
interface EchoServer {
  readonly name: string;
  readonly registry: ServiceRegistry;
  readonly http: Server;
  readonly etcd: Etcd;
  leaseId(): bigint | undefined;
  /** Deregisters first (clients stop sending), then stops listening. */
  shutdown(): Promise<void>;
}

async function startEchoServer(name: string, endpoints: readonly string[]): Promise<EchoServer> {
  const http = createServer((_request, response) => response.end(name));
  await new Promise<void>((resolve) => http.listen(0, '127.0.0.1', resolve));
  const addr = `127.0.0.1:${(http.address() as AddressInfo).port}`;
  const etcd = new Etcd({ endpoints: [...endpoints] });
  const registry = new ServiceRegistry(etcd, { ttl: 5 });
  const registration = await registry.register(SERVICE, { addr, metadata: { name } });
  registration.on('lost', (error) => console.log(`${name}: registration lost (${error.reason})`));
  registration.on('registered', (leaseId) =>
    console.log(`${name}: registered again under lease ${leaseId.toString(16)}`),
  );
  console.log(`${name}: listening on ${addr}, registered as ${registration.key}`);
  return {
    name,
    registry,
    http,
    etcd,
    leaseId: () => registration.leaseId,
    async shutdown() {
      await registry.close();
      console.log(`${name}: deregistered`);
      http.closeAllConnections();
      await new Promise((resolve) => http.close(resolve));
      await etcd.close();
    },
  };
}

/** Round-robin over whatever the discovery says is live right now. */
class Balancer {
  #next = 0;
  constructor(private readonly live: () => readonly ServiceInstance[]) {}

  async send(): Promise<string> {
    const instances = this.live();
    if (instances.length === 0) throw new Error('no live instance');
    const instance = instances[this.#next++ % instances.length]!;
    const response = await fetch(`http://${instance.addr}/`);
    return response.text();
  }
}

/** Sends `count` requests; returns how many each server answered, as `name=n`. */
async function sendRequests(balancer: Balancer, count: number): Promise<string> {
  const answered = new Map<string, number>();
  for (let i = 0; i < count; i++) {
    const name = await balancer.send();
    answered.set(name, (answered.get(name) ?? 0) + 1);
  }
  return [...answered.entries()]
    .sort()
    .map(([name, n]) => `${name}=${n}`)
    .join(' ');
}

/** Resolves once the discovery's set satisfies `check`. */
function until(
  discovery: ReturnType<ServiceRegistry['discover']>,
  check: (instances: readonly ServiceInstance[]) => boolean,
): Promise<void> {
  if (check(discovery.instances)) return Promise.resolve();
  return new Promise((resolve) => {
    const onChange = (instances: readonly ServiceInstance[]) => {
      if (!check(instances)) return;
      discovery.off('change', onChange);
      resolve();
    };
    discovery.on('change', onChange);
  });
}

const { etcd, endpoints, close } = await connect(
  commandLine('service-discovery', ENDPOINTS_FLAG).endpoints,
);
const servers: EchoServer[] = [];
try {
  for (const name of ['echo-1', 'echo-2', 'echo-3']) {
    servers.push(await startEchoServer(name, endpoints));
  }
  const [, second, third] = servers as [EchoServer, EchoServer, EchoServer];

  // The client: a registry used only to discover (it grants nothing).
  const discovery = new ServiceRegistry(etcd).discover(SERVICE);
  const names = (instances: readonly ServiceInstance[]) =>
    instances.map((i) => (i.metadata as { name: string }).name).join(', ');
  discovery.on('change', (instances, revision) =>
    console.log(`client: live at revision ${revision}: ${names(instances) || '(none)'}`),
  );
  await discovery.synced;
  const balancer = new Balancer(() => discovery.instances);
  console.log(`client: 9 requests -> ${await sendRequests(balancer, 9)}`);

  // echo-2's lease is lost (an expiry would do the same): it registers again by itself.
  const oldLease = second.leaseId();
  await etcd.lease.revoke(oldLease!);
  await until(
    discovery,
    (instances) => instances.length === 3 && instances.every((i) => i.leaseId !== oldLease),
  );
  console.log(`client: 9 requests -> ${await sendRequests(balancer, 9)}`);

  // echo-3 shuts down gracefully: deregistered before it stops listening.
  await third.shutdown();
  servers.pop();
  await until(discovery, (instances) => instances.length === 2);
  const afterShutdown = await sendRequests(balancer, 6);
  console.log(`client: 6 requests -> ${afterShutdown}`);
  await discovery.close();

  if (afterShutdown !== 'echo-1=3 echo-2=3') {
    console.log('MISMATCH: requests should go to echo-1 and echo-2 only, evenly');
    process.exitCode = 1;
  } else {
    console.log('service-discovery OK: requests went only to live instances, none failed');
  }
} finally {
  for (const server of servers) await server.shutdown();
  await close();
}
