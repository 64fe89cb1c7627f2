// etcd's HTTP endpoints over a member view made by hand, on a port of their own: the client port's
// HTTP/1.x side without a member behind it, for a version the embedded server is not started as
// and for states (no leader, a learner) a single member never reaches.
import { createServer, type Server, type Socket } from 'node:net';
import {
  DEFAULT_HTTP1_LIMITS,
  Http1Connection,
  type Http1Limits,
} from '../../../src/net/http1/connection.js';
import { EtcdEndpoints } from '../../../src/net/http1/etcd-endpoints.js';
import type { EtcdHttpVersion, MemberView } from '../../../src/net/http1/member-view.js';
import { sniffProtocol } from '../../../src/net/http1/protocol-sniff.js';

/** A member view whose state the test sets. */
export interface HandView extends MemberView {
  leader: bigint;
  learner: boolean;
  alarmNames: string[];
  revision: number;
  keys: number;
}

/** A healthy single member answering as `etcdVersion` (claiming `serverVersion`). */
export function handView(etcdVersion: EtcdHttpVersion, serverVersion: string): HandView {
  const memberId = 0x8e9e05c52164694dn;
  const view: HandView = {
    etcdVersion,
    serverVersion,
    memberId,
    leader: memberId,
    learner: false,
    alarmNames: [],
    revision: 1,
    keys: 0,
    hasLeader: () => view.leader !== 0n,
    isLeader: () => view.leader === memberId,
    isLearner: () => view.learner,
    leaderChanges: () => 1,
    alarms: () => view.alarmNames,
    readFault: (serializable) =>
      serializable || view.leader !== 0n ? undefined : 'etcdserver: request timed out',
    figures: () => ({
      revision: view.revision,
      compactRevision: 0,
      keys: view.keys,
      dbSize: 20480,
      dbSizeInUse: 16384,
      quotaBackendBytes: 2 * 1024 * 1024 * 1024,
      appliedIndex: 4,
    }),
  };
  return view;
}

/** A listening HTTP/1.x port over a view. */
export interface ViewServer {
  readonly port: number;
  close(): Promise<void>;
}

/** Serves `view` on a free loopback port with `limits`. */
export async function serveView(
  view: MemberView,
  limits: Http1Limits = DEFAULT_HTTP1_LIMITS,
): Promise<ViewServer> {
  const endpoints = new EtcdEndpoints(view);
  const sockets = new Set<Socket>();
  const server: Server = createServer((socket) => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => {});
    sniffProtocol(socket, {
      h2: (h2) => h2.destroy(),
      http1: (http1, first) =>
        new Http1Connection(http1, (head) => endpoints.answer(head), limits, first),
    });
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  const port = typeof address === 'object' && address !== null ? address.port : 0;
  return {
    port,
    close: () =>
      new Promise((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}
