// The etcd target without the repository's testkit (as installed from the registry): one typed
// error that says what to do, not a module-resolution stack.
import { EtcdError } from '@etcdkit/client';
import { describe, expect, it } from 'vitest';
import { TargetUnavailableError } from '../src/errors.js';
import { loadTestkit } from '../src/testkit.js';

const missing = (code: string) => () =>
  Promise.reject(Object.assign(new Error(`Cannot find package '@etcdkit/testkit'`), { code }));

describe('loadTestkit', () => {
  it('loads the repository testkit when it is there', async () => {
    const testkit = await loadTestkit('etcd');
    expect(typeof testkit.startEtcdCluster).toBe('function');
  });

  it.each(['ERR_MODULE_NOT_FOUND', 'MODULE_NOT_FOUND', 'ERR_UNKNOWN_FILE_EXTENSION'])(
    'turns %s into TargetUnavailableError',
    async (code) => {
      const error = await loadTestkit('etcd', missing(code)).catch((e: unknown) => e);
      expect(error).toBeInstanceOf(TargetUnavailableError);
      expect(error).toBeInstanceOf(EtcdError);
      const typed = error as TargetUnavailableError;
      expect(typed.code).toBe('TARGET_UNAVAILABLE');
      expect(typed.target).toBe('etcd');
      expect(typed.message).toContain(
        `the etcd target needs the etcdkit repository's testkit, which is not installed (${code})`,
      );
      expect(typed.message).not.toContain('\n');
      expect((typed.cause as { code: string }).code).toBe(code);
    },
  );

  it('lets any other failure through unchanged', async () => {
    const failure = new TypeError('broken testkit');
    await expect(loadTestkit('etcd', () => Promise.reject(failure))).rejects.toBe(failure);
  });
});
