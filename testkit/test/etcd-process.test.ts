import { existsSync } from 'node:fs';
import { describe, expect, it, onTestFinished } from 'vitest';
import { EtcdHttpGateway, type EtcdProcess, EtcdStartError, startEtcd } from '../src/index.js';
import { etcdLookup, noEtcd, processExists, tcpConnect } from './helpers.js';

async function started(options?: Parameters<typeof startEtcd>[0]): Promise<EtcdProcess> {
  const etcd = await startEtcd(options);
  onTestFinished(() => etcd.stop());
  return etcd;
}

describe.skipIf(noEtcd)('startEtcd (real etcd binary)', () => {
  it('serves on a free loopback port and reports the binary version', async () => {
    const etcd = await started();

    expect(etcd.endpoint).toBe(`http://127.0.0.1:${etcd.clientPort}`);
    expect(etcd.endpoints).toEqual([etcd.endpoint]);
    expect(etcd.version).toBe(etcdLookup.found ? etcdLookup.binary.version : '');
    expect(etcd.running).toBe(true);
    expect(await new EtcdHttpGateway(etcd.endpoint).version()).toBe(etcd.version);
  });

  it('stop() ends the process, frees the port and removes the data dir', async () => {
    const etcd = await startEtcd();
    const pid = etcd.pid!;
    await tcpConnect(etcd.clientPort);

    await etcd.stop();

    expect(etcd.running).toBe(false);
    expect(processExists(pid)).toBe(false);
    await expect(tcpConnect(etcd.clientPort)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    expect(existsSync(etcd.dataDir)).toBe(false);
    await etcd.stop();
  });

  it('restart() brings the server back on the same port with its data', async () => {
    const etcd = await started();
    const gateway = new EtcdHttpGateway(etcd.endpoint);
    await gateway.put('restart/key', 'kept');
    const firstPid = etcd.pid;

    await etcd.restart();

    expect(etcd.pid).not.toBe(firstPid);
    expect(await gateway.get('restart/key')).toBe('kept');
  });

  it('kill() crashes the server but keeps its data for restart()', async () => {
    const etcd = await started();
    const gateway = new EtcdHttpGateway(etcd.endpoint);
    await gateway.put('crash/key', 'survives');

    await etcd.kill();
    expect(etcd.running).toBe(false);
    await expect(tcpConnect(etcd.clientPort)).rejects.toMatchObject({ code: 'ECONNREFUSED' });
    expect(existsSync(etcd.dataDir)).toBe(true);

    await etcd.restart();
    expect(await gateway.get('crash/key')).toBe('survives');
  });

  it('pause() leaves connections unanswered until resume()', async () => {
    const etcd = await started();
    await new EtcdHttpGateway(etcd.endpoint).put('pause/key', 'v');

    await etcd.pause();
    await tcpConnect(etcd.clientPort);
    await expect(
      new EtcdHttpGateway(etcd.endpoint, undefined, 300).get('pause/key'),
    ).rejects.toThrow(/timed out after 300 ms/);

    etcd.resume();
    expect(await new EtcdHttpGateway(etcd.endpoint).get('pause/key')).toBe('v');
  });

  it('stop() also ends a paused server', async () => {
    const etcd = await startEtcd();
    const pid = etcd.pid!;
    await etcd.pause();

    await etcd.stop();

    expect(processExists(pid)).toBe(false);
  });

  it('passes extra flags to etcd', async () => {
    const etcd = await started({ args: ['--max-txn-ops', '1'] });
    const put = (key: string) => ({
      request_put: { key: Buffer.from(key).toString('base64'), value: 'dg==' },
    });

    await expect(
      new EtcdHttpGateway(etcd.endpoint).post('/v3/kv/txn', { success: [put('a'), put('b')] }),
    ).rejects.toThrow(/too many operations in txn request/);
  });

  it('reports why etcd did not start, with the end of its output', async () => {
    const failure = startEtcd({ args: ['--no-such-flag'] });

    await expect(failure).rejects.toBeInstanceOf(EtcdStartError);
    await expect(failure).rejects.toMatchObject({ code: 'ETCD_EXITED' });
    await expect(failure).rejects.toThrow(
      /exited with code \d+ before it became ready[\s\S]*last lines of etcd output[\s\S]*no-such-flag/,
    );
  });

  it('names the missing binary', async () => {
    await expect(startEtcd({ binary: '/nonexistent/etcd' })).rejects.toThrow(
      'cannot start etcd: /nonexistent/etcd is not an executable file',
    );
  });
});
