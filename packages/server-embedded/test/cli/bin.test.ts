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

function exitOf(child: ChildProcess): Promise<{ code: number | null; stderr: string }> {
  let stderr = '';
  child.stderr?.on('data', (chunk: Buffer) => {
    stderr += chunk.toString();
  });
  return new Promise((resolve) => child.on('exit', (code) => resolve({ code, stderr })));
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
    const exited = exitOf(child);
    try {
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
  });
});
