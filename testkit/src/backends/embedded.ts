import { BackendUnavailableError } from '../errors.js';
import type { BackendProvider, TestBackend } from './types.js';

/**
 * Switch for the embedded server. Set to true once `EmbeddedEtcd` is exported by
 * `@etcdkit/server-embedded` (issue 3); {@link startEmbedded} is the one place that starts it.
 */
const EMBEDDED_SERVER_BUILT = false;

const NOT_BUILT = 'the embedded server is not built yet (issue 3)';

/** `@etcdkit/server-embedded`: in-process, in memory, always available once built. */
export const embeddedBackend: BackendProvider = {
  name: 'embedded',
  startTimeoutMs: 30_000,
  availability() {
    return EMBEDDED_SERVER_BUILT
      ? { available: true, detail: 'in-process @etcdkit/server-embedded' }
      : { available: false, reason: NOT_BUILT };
  },
  start: () => startEmbedded(),
};

/**
 * Starts `EmbeddedEtcd`. The module is loaded by name at run time and checked, because the class
 * does not exist yet; when it does, replace the lookup with
 * `const { EmbeddedEtcd } = await import('@etcdkit/server-embedded')`.
 */
async function startEmbedded(): Promise<TestBackend> {
  const module: object = await import('@etcdkit/server-embedded');
  const embeddedEtcd: unknown = Reflect.get(module, 'EmbeddedEtcd');
  const start: unknown =
    typeof embeddedEtcd === 'function' ? Reflect.get(embeddedEtcd, 'start') : undefined;
  if (typeof start !== 'function') throw new BackendUnavailableError('embedded', NOT_BUILT);
  const server: unknown = await start.call(embeddedEtcd);
  if (typeof server !== 'object' || server === null) {
    throw new Error('EmbeddedEtcd.start() did not return a server');
  }
  const endpoint: unknown = Reflect.get(server, 'endpoint');
  const stop: unknown = Reflect.get(server, 'stop');
  const version: unknown = Reflect.get(server, 'version');
  if (typeof endpoint !== 'string' || typeof stop !== 'function') {
    throw new Error('EmbeddedEtcd.start() did not return { endpoint, stop() }');
  }
  return {
    name: 'embedded',
    endpoints: [endpoint],
    version: typeof version === 'string' ? version : 'embedded',
    // The embedded server implements the 3.7 protocol, RangeStream included.
    features: { rangeStream: true },
    stop: async () => {
      await stop.call(server);
    },
  };
}
