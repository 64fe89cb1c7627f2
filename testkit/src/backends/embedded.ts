import { EmbeddedEtcd } from '@etcdkit/server-embedded';
import type { BackendProvider, TestBackend } from './types.js';

/** `@etcdkit/server-embedded`: in-process and in memory, so always available. */
export const embeddedBackend: BackendProvider = {
  name: 'embedded',
  startTimeoutMs: 30_000,
  availability() {
    return { available: true, detail: 'in-process @etcdkit/server-embedded' };
  },
  start: () => startEmbedded(),
};

async function startEmbedded(): Promise<TestBackend> {
  const server = await EmbeddedEtcd.start();
  return {
    name: 'embedded',
    endpoints: [...server.endpoints],
    version: server.version,
    // The embedded server implements the 3.7 protocol, RangeStream included.
    features: { rangeStream: true },
    stop: () => server.stop(),
  };
}
