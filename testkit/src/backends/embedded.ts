import { EmbeddedEtcd, type EtcdVersion } from '@etcdkit/server-embedded';
import type { BackendProvider, TestBackend } from './types.js';

/** `@etcdkit/server-embedded`: in-process and in memory, so always available. */
export const embeddedBackend: BackendProvider = {
  name: 'embedded',
  startTimeoutMs: 30_000,
  availability() {
    return { available: true, detail: 'in-process @etcdkit/server-embedded' };
  },
  start: (env) => startEmbedded(env.ETCDKIT_EMBEDDED_ETCD_VERSION),
};

/**
 * Starts the server answering as `etcdVersion` (`ETCDKIT_EMBEDDED_ETCD_VERSION`, e.g. `3.4`;
 * default the server's own default); a version it does not know fails the start.
 */
async function startEmbedded(etcdVersion: string | undefined): Promise<TestBackend> {
  const chosen = etcdVersion?.trim() || undefined;
  const server = await EmbeddedEtcd.start({ etcdVersion: chosen as EtcdVersion | undefined });
  return {
    name: 'embedded',
    endpoints: [...server.endpoints],
    version: server.version,
    features: { rangeStream: server.etcdVersionTraits.rangeStream },
    stop: () => server.stop(),
  };
}
