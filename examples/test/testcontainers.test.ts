// Testing against a real etcd in a container: `npx vitest run examples/test/testcontainers.test.ts`.
//
// testcontainers starts the official etcd image on a random host port and removes it afterwards.
// It needs a Docker engine (DOCKER_HOST, or /var/run/docker.sock); without one the test is reported
// as skipped, with the reason in its name. The image can be changed with ETCDKIT_ETCD_IMAGE.
import { existsSync } from 'node:fs';
import { Etcd } from '@etcdkit/client';
import { Mutex, Session } from '@etcdkit/recipes';
import { GenericContainer, type StartedTestContainer, Wait } from 'testcontainers';
import { afterAll, beforeAll, describe, expect, test } from 'vitest';

const IMAGE = process.env.ETCDKIT_ETCD_IMAGE ?? 'gcr.io/etcd-development/etcd:v3.5.17';
const docker = process.env.DOCKER_HOST
  ? `DOCKER_HOST=${process.env.DOCKER_HOST}`
  : existsSync('/var/run/docker.sock')
    ? '/var/run/docker.sock'
    : undefined;

describe.runIf(docker !== undefined)(`etcd in a container (${IMAGE})`, () => {
  let container: StartedTestContainer;
  let etcd: Etcd;

  beforeAll(async () => {
    container = await new GenericContainer(IMAGE)
      .withCommand([
        'etcd',
        '--listen-client-urls=http://0.0.0.0:2379',
        '--advertise-client-urls=http://127.0.0.1:2379',
      ])
      .withExposedPorts(2379)
      .withWaitStrategy(Wait.forLogMessage(/ready to serve client requests/))
      .start();
    etcd = new Etcd({
      endpoints: [`http://${container.getHost()}:${container.getMappedPort(2379)}`],
    });
  }, 120_000);

  afterAll(async () => {
    await etcd?.close();
    await container?.stop();
  });

  test('put and get round-trip', async () => {
    await etcd.put('greeting', 'hello');
    expect((await etcd.get('greeting'))?.text()).toBe('hello');
  });

  test('a lock hands out increasing fencing tokens', async () => {
    await using session = await Session.create(etcd, { ttl: 5 });
    const mutex = new Mutex(session, 'locks/container');
    const first = await mutex.lock();
    await first.unlock();
    const second = await mutex.lock();
    expect(second.fencingToken).toBeGreaterThan(first.fencingToken);
    await second.unlock();
  });
});

describe.skipIf(docker !== undefined)('etcd in a container', () => {
  test.skip('skipped: no Docker engine (DOCKER_HOST unset and no /var/run/docker.sock)', () => {});
});
