// Conformance against etcd: Maintenance.Downgrade. etcd 3.4 has no such method; 3.5 validates the
// target (exactly the minor below the cluster version), records a job on ENABLE and drops it on
// CANCEL, but answers those two only with its request timeout's error (the applier returns no
// result for the job's raft entry). The errors come from the client's catalog (08 names them).
import { etcdserverpb_Maintenance as Maintenance } from '@etcdkit/client/protocol';
import { expect, it } from 'vitest';
import { status } from '../support/grpc-client.js';
import type { TestServer } from '../support/test-server.js';
import { atLeast } from './fresh-server.js';
import { describeConformance, etcdError } from './suite.js';

const Action = { VALIDATE: 0, ENABLE: 1, CANCEL: 2 } as const;

/** A Downgrade call's response version, or its status. */
async function downgrade(server: TestServer, action: number, version = '') {
  try {
    const response = await server.client.unary(Maintenance.Downgrade, { action, version });
    return { version: response.version, header: response.header?.memberId !== undefined };
  } catch (error) {
    const { code, details } = error as { code: number; details: string };
    return { code, details };
  }
}

describeConformance('Downgrade (58)', ({ fresh }) => {
  it('58 Downgrade: Unimplemented on 3.4; from 3.5 VALIDATE wants the minor below the cluster version', async () => {
    const server = await fresh();
    const { version } = server;
    if (!atLeast(version, 3, 5)) {
      expect(await downgrade(server, Action.VALIDATE, '3.3')).toEqual(
        status(12, 'unknown method Downgrade for service etcdserverpb.Maintenance'),
      );
      return;
    }
    const [major, minor] = version.split('.').map(Number) as [number, number];
    const below = `${major}.${minor - 1}`;
    // 3.5 names the cluster version major.minor.0, 3.6 on major.minor (version.Cluster).
    const cluster = atLeast(version, 3, 6) ? `${major}.${minor}` : `${major}.${minor}.0`;
    for (const target of [below, `${below}.0`, `${below}.7`, `${below}.1-rc.0`]) {
      expect(await downgrade(server, Action.VALIDATE, target)).toEqual({
        version: cluster,
        header: true,
      });
    }
    for (const target of [`${major}.${minor - 2}`, `${major}.${minor}`, '4.4']) {
      expect(await downgrade(server, Action.VALIDATE, target)).toEqual(
        etcdError('INVALID_DOWNGRADE_TARGET_VERSION'),
      );
    }
    for (const target of ['', 'x', `v${below}`, `${below}.`, '3']) {
      expect(await downgrade(server, Action.VALIDATE, target)).toEqual(
        etcdError('WRONG_DOWNGRADE_VERSION_FORMAT'),
      );
    }
    expect(await downgrade(server, 7, below)).toEqual(etcdError('UNKNOWN_METHOD'));
    expect(await downgrade(server, Action.ENABLE, `${major}.${minor - 2}`)).toEqual(
      etcdError('INVALID_DOWNGRADE_TARGET_VERSION'),
    );
  });

  it('58 Downgrade: ENABLE records the job (3.5 answers it with the request timeout), CANCEL drops it; 3.4 has neither', async () => {
    const server = await fresh();
    const { version } = server;
    if (!atLeast(version, 3, 5)) {
      const unimplemented = status(
        12,
        'unknown method Downgrade for service etcdserverpb.Maintenance',
      );
      expect(await downgrade(server, Action.ENABLE, '3.3')).toEqual(unimplemented);
      expect(await downgrade(server, Action.CANCEL)).toEqual(unimplemented);
      return;
    }
    const [major, minor] = version.split('.').map(Number) as [number, number];
    const below = `${major}.${minor - 1}`;
    const answered = atLeast(version, 3, 6);
    const cluster = answered ? `${major}.${minor}` : `${major}.${minor}.0`;
    const applied = answered ? { version: cluster, header: true } : etcdError('REQUEST_TIMEOUT');
    if (!answered) {
      expect(await downgrade(server, Action.CANCEL)).toEqual(etcdError('NO_INFLIGHT_DOWNGRADE'));
    }
    expect(await downgrade(server, Action.ENABLE, below)).toEqual(applied);
    expect(await downgrade(server, Action.VALIDATE, below)).toEqual(
      etcdError('DOWNGRADE_IN_PROCESS'),
    );
    expect(await downgrade(server, Action.ENABLE, below)).toEqual(
      etcdError('DOWNGRADE_IN_PROCESS'),
    );
    // The target is checked before the job.
    expect(await downgrade(server, Action.VALIDATE, `${major}.${minor}`)).toEqual(
      etcdError('INVALID_DOWNGRADE_TARGET_VERSION'),
    );
    expect(await downgrade(server, Action.CANCEL)).toEqual(applied);
    expect(await downgrade(server, Action.CANCEL)).toEqual(
      answered ? { version: cluster, header: true } : etcdError('NO_INFLIGHT_DOWNGRADE'),
    );
    expect(await downgrade(server, Action.VALIDATE, below)).toEqual({
      version: cluster,
      header: true,
    });
  }, 40_000);
});
