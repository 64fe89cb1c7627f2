// The etcdkit-server bin as `npm install` links it in this repository (bin/etcdkit-server.js, which
// runs the sources here): npx finds it without the registry, it serves, and a SIGTERM sent to it
// reaches the server, which stops cleanly.
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { Etcd } from '@etcdkit/client';
import { freePort } from '@etcdkit/testkit';
import { describe, expect, it } from 'vitest';
import { REPO_ROOT } from './cli-process.js';

const LINKED = join(REPO_ROOT, 'node_modules', '.bin', 'etcdkit-server');

/** The child's exit, and a promise of its first log line saying it serves. */
function exitOf(child: ChildProcess): {
  exited: Promise<{ code: number | null; stderr: string }>;
  serving: Promise<void>;
} {
  let stderr = '';
  let markServing: () => void = () => {};
  const serving = new Promise<void>((resolve) => {
    markServing = resolve;
  });
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
    if (stderr.includes('ready to serve client requests')) markServing();
  });
  const exited = new Promise<{ code: number | null; stderr: string }>((resolve) =>
    child.on('exit', (code) => resolve({ code, stderr })),
  );
  return { exited, serving: Promise.race([serving, exited.then(() => undefined)]) };
}

describe('the etcdkit-server bin in the repository', () => {
  it('is found by npx without the registry (--no: never install)', async () => {
    const { stdout } = await promisify(execFile)(
      'npx',
      ['--no', '--', 'etcdkit-server', '--version'],
      {
        cwd: join(REPO_ROOT, 'docs'),
      },
    );
    expect(stdout.split('\n')[0]).toBe('etcdkit-server Version: 0.1.0');
  });

  it('serves from the sources and stops with exit 0 on SIGTERM', async () => {
    const endpoint = `http://127.0.0.1:${await freePort()}`;
    const child = spawn(LINKED, ['--listen-client-urls', endpoint], {
      cwd: REPO_ROOT,
      stdio: ['ignore', 'ignore', 'pipe'],
    });
    const { exited, serving } = exitOf(child);
    try {
      // Through tsx the sources take seconds to load under load: a put before it listens would be
      // refused (and, after retries, given up as not applied).
      await serving;
      const etcd = new Etcd({ endpoints: [endpoint] });
      await etcd.put('via', 'bin');
      expect((await etcd.get('via'))?.text()).toBe('bin');
      await etcd.close();
    } finally {
      child.kill('SIGTERM');
    }
    const { code, stderr } = await exited;
    expect(stderr).toContain('received signal; shutting down');
    expect(code).toBe(0);
  }, 120_000);
});
