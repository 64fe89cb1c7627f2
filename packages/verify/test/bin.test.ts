// The etcdkit-verify bin as `npm install` links it in this repository (bin/etcdkit-verify.js, which
// runs the sources here through tsx): npx finds it without the registry and it verifies.
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const REPO_ROOT = fileURLToPath(new URL('../../../', import.meta.url));

describe('the etcdkit-verify bin in the repository', () => {
  it('is found by npx without the registry and checks a run on the embedded server', {
    timeout: 60_000,
  }, async () => {
    const { stdout } = await promisify(execFile)(
      'npx',
      [
        '--no',
        '--',
        'etcdkit-verify',
        '--workload',
        'register',
        '--embedded',
        '--ops',
        '40',
        '--json',
      ],
      { cwd: fileURLToPath(new URL('../../../docs/', import.meta.url)) },
    );
    const summary = JSON.parse(stdout.trimEnd().split('\n').at(-1)!);
    expect(summary.valid).toBe(true);
    expect(summary.workload).toBe('register');
    expect(summary.ops).toBe(40);
  });

  it('passes its exit code on: 64 on bad usage', async () => {
    const failed = await promisify(execFile)(
      fileURLToPath(new URL('node_modules/.bin/etcdkit-verify', `file://${REPO_ROOT}`)),
      ['--workload', 'bank'],
      { cwd: REPO_ROOT },
    ).catch((error: { code: number; stderr: string }) => error);
    expect('code' in failed && failed.code).toBe(64);
    expect('stderr' in failed && failed.stderr).toContain(
      'etcdkit-verify: --workload must be one of register, txn, lock, election, watch, got "bank"',
    );
  });
});
