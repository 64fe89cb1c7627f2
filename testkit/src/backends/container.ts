import { existsSync } from 'node:fs';
import { homedir } from 'node:os';
import { join } from 'node:path';
import type { StartedTestContainer } from 'testcontainers';
import { BackendUnavailableError } from '../errors.js';
import type { TestkitEnv } from '../etcd-binary.js';
import { EtcdHttpGateway } from '../gateway.js';
import { etcdFeatures } from './features.js';
import type { BackendProvider } from './types.js';

/** Image used unless `ETCDKIT_ETCD_IMAGE` names another. */
export const DEFAULT_ETCD_IMAGE = 'gcr.io/etcd-development/etcd:v3.6.16';

const CLIENT_PORT = 2379;

/**
 * etcd in a Docker container through testcontainers, when `ETCDKIT_BACKEND=container` (or
 * `ETCDKIT_BACKENDS` names it). testcontainers is imported only when a container starts.
 */
export const containerBackend: BackendProvider = {
  name: 'container',
  // Pulling an image on a cold machine takes a while.
  startTimeoutMs: 300_000,
  availability(env) {
    if (!containerRequested(env)) {
      return {
        available: false,
        reason: 'not requested: set ETCDKIT_BACKEND=container to run against a container',
      };
    }
    const docker = findDocker(env);
    if (docker === undefined) {
      return {
        available: false,
        reason:
          'Docker is not available (DOCKER_HOST is unset and no Docker socket exists, e.g. /var/run/docker.sock)',
      };
    }
    return { available: true, detail: `${imageOf(env)} via ${docker}` };
  },
  async start(env) {
    const image = imageOf(env);
    let testcontainers: typeof import('testcontainers');
    try {
      testcontainers = await import('testcontainers');
    } catch (error) {
      throw new BackendUnavailableError(
        'container',
        'the testcontainers package cannot be loaded',
        {
          cause: error,
        },
      );
    }
    const { GenericContainer, Wait } = testcontainers;
    let container: StartedTestContainer;
    try {
      container = await new GenericContainer(image)
        .withExposedPorts(CLIENT_PORT)
        .withCommand([
          '/usr/local/bin/etcd',
          '--name',
          'etcdkit',
          '--data-dir',
          '/tmp/etcd-data',
          '--listen-client-urls',
          `http://0.0.0.0:${CLIENT_PORT}`,
          '--advertise-client-urls',
          `http://127.0.0.1:${CLIENT_PORT}`,
          '--listen-peer-urls',
          'http://127.0.0.1:2380',
          '--initial-advertise-peer-urls',
          'http://127.0.0.1:2380',
          '--initial-cluster',
          'etcdkit=http://127.0.0.1:2380',
          '--initial-cluster-state',
          'new',
          '--log-level',
          'warn',
        ])
        .withWaitStrategy(Wait.forHttp('/version', CLIENT_PORT).forStatusCode(200))
        .withStartupTimeout(120_000)
        .start();
    } catch (error) {
      const message = error instanceof Error ? error.message : String(error);
      throw new BackendUnavailableError(
        'container',
        `could not start ${image} (is Docker running?): ${message}`,
        { cause: error },
      );
    }
    const endpoint = `http://${container.getHost()}:${container.getMappedPort(CLIENT_PORT)}`;
    let version = 'unknown';
    try {
      version = await new EtcdHttpGateway(endpoint).version();
    } catch {
      // Wait.forHttp saw /version answer; a failure here only loses the feature detection.
    }
    return {
      name: 'container',
      endpoints: [endpoint],
      version,
      features: etcdFeatures(version),
      stop: async () => {
        await container.stop();
      },
    };
  },
};

function containerRequested(env: TestkitEnv): boolean {
  if (env.ETCDKIT_BACKEND?.trim() === 'container') return true;
  return (env.ETCDKIT_BACKENDS ?? '').split(',').some((name) => name.trim() === 'container');
}

function imageOf(env: TestkitEnv): string {
  const image = env.ETCDKIT_ETCD_IMAGE?.trim();
  return image === undefined || image === '' ? DEFAULT_ETCD_IMAGE : image;
}

/**
 * Where Docker seems to be, checked without connecting (suites ask while collecting tests, which
 * must stay synchronous). A daemon that is configured but down shows up when the container starts.
 */
function findDocker(env: TestkitEnv): string | undefined {
  const host = env.DOCKER_HOST?.trim();
  if (host !== undefined && host !== '') return `DOCKER_HOST=${host}`;
  const home = env.HOME ?? homedir();
  const sockets = [
    '/var/run/docker.sock',
    join(home, '.docker/run/docker.sock'),
    join(home, '.docker/desktop/docker.sock'),
    ...(env.XDG_RUNTIME_DIR === undefined ? [] : [join(env.XDG_RUNTIME_DIR, 'docker.sock')]),
  ];
  const socket = sockets.find((path) => existsSync(path));
  if (socket !== undefined) return socket;
  if (existsSync(join(home, '.testcontainers.properties'))) return '~/.testcontainers.properties';
  return undefined;
}
