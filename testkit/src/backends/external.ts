import { EtcdHttpGateway } from '../gateway.js';
import { etcdFeatures } from './features.js';
import type { BackendProvider } from './types.js';

/** Endpoints from `ETCDKIT_ENDPOINTS`, comma separated. */
export function externalEndpoints(raw: string | undefined): string[] {
  return (raw ?? '')
    .split(',')
    .map((endpoint) => endpoint.trim())
    .filter((endpoint) => endpoint !== '');
}

/** An etcd someone else runs (`ETCDKIT_ENDPOINTS`); shared, so tests rely on unique prefixes. */
export const externalBackend: BackendProvider = {
  name: 'external',
  startTimeoutMs: 30_000,
  availability(env) {
    const endpoints = externalEndpoints(env.ETCDKIT_ENDPOINTS);
    return endpoints.length > 0
      ? { available: true, detail: `ETCDKIT_ENDPOINTS=${endpoints.join(',')}` }
      : { available: false, reason: 'ETCDKIT_ENDPOINTS is not set' };
  },
  async start(env) {
    const endpoints = externalEndpoints(env.ETCDKIT_ENDPOINTS);
    let version = 'unknown';
    try {
      version = await new EtcdHttpGateway(endpoints[0]!, undefined, 5_000).version();
    } catch {
      // A TLS-only or gateway-less server: features then default to the oldest.
    }
    return {
      name: 'external',
      endpoints,
      version,
      features: etcdFeatures(version),
      stop: async () => {},
    };
  },
};
