// The repository's testkit, which starts real etcd processes, loaded only for the targets that
// need it: it is a private TypeScript package, absent from an install from the registry.
import { TargetUnavailableError } from './errors.js';

/** What the targets use of the testkit. */
export type Testkit = typeof import('@etcdkit/testkit');

/** Error codes of a module that is not there, or is TypeScript and node runs without tsx. */
const NOT_LOADABLE = new Set([
  'ERR_MODULE_NOT_FOUND',
  'MODULE_NOT_FOUND',
  'ERR_UNKNOWN_FILE_EXTENSION',
]);

/**
 * Loads the testkit for a `target`, or throws {@link TargetUnavailableError} when it cannot be
 * loaded here; `load` is the import (replaced in tests).
 */
export async function loadTestkit(
  target: string,
  load: () => Promise<Testkit> = () => import('@etcdkit/testkit'),
): Promise<Testkit> {
  try {
    return await load();
  } catch (error) {
    const code = (error as { code?: unknown } | null)?.code;
    if (typeof code !== 'string' || !NOT_LOADABLE.has(code)) throw error;
    throw new TargetUnavailableError(
      target,
      `the ${target} target needs the etcdkit repository's testkit, which is not installed (${code}): run it from a checkout of the repository (node --conditions=etcdkit-source --import tsx packages/verify/src/cli/main.ts), or use --endpoints or --embedded`,
      { cause: error },
    );
  }
}
