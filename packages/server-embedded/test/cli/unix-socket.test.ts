// etcdkit-server --listen-client-urls unix://... answers etcd 3.4's etcdctl on the socket, reports
// it, and removes the socket file when it shuts down.
import { existsSync } from 'node:fs';
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { startCli, stopAllCliProcesses } from './cli-process.js';
import { etcdctl, etcdctlVersion } from './etcdctl.js';

const ctlVersion = etcdctlVersion();

describe.skipIf(ctlVersion === undefined && process.env.ETCDKIT_REQUIRE_REAL_ETCD !== '1')(
  'etcdkit-server on a unix socket',
  () => {
    let dir: string;
    beforeEach(async () => {
      dir = await mkdtemp(join(tmpdir(), 'etcdkit-unix-cli-'));
    });
    afterEach(async () => {
      await stopAllCliProcesses();
      await rm(dir, { recursive: true, force: true });
    });

    it('answers etcdctl --endpoints unix:///path, lists the URL, and removes the file on exit', async () => {
      const url = `unix://${join(dir, 'etcd.sock')}`;
      const cli = await startCli(['--listen-client-urls', url, '--advertise-client-urls', url]);
      const ready = cli.logs().find((line) => line.msg === 'ready to serve client requests');
      expect(ready?.endpoints).toEqual([url]);
      const put = await etcdctl(url, ['put', 'greeting', 'hello']);
      expect([put.code, put.stdout, put.stderr]).toEqual([0, 'OK\n', '']);
      const get = await etcdctl(url, ['get', 'greeting']);
      expect([get.code, get.stdout]).toEqual([0, 'greeting\nhello\n']);
      const members = await etcdctl(url, ['member', 'list']);
      expect(members.code).toBe(0);
      expect(members.stdout).toMatch(new RegExp(`, ${url.replace(/[.]/g, '\\.')}, false\\n$`));
      // Maintenance calls take the authority filter's way for etcdctl 3.4 (a scheme in :authority).
      const status = await etcdctl(url, ['endpoint', 'status']);
      expect([status.code, status.stderr]).toEqual([0, '']);
      expect(status.stdout.startsWith(`${url}, `)).toBe(true);
      cli.child.kill('SIGTERM');
      const exit = await cli.exited;
      expect(exit.code).toBe(0);
      expect(existsSync(join(dir, 'etcd.sock'))).toBe(false);
    });
  },
);
