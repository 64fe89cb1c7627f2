// What the simulated-cluster tests share: a cluster started per test with the raw clients opened
// on its members, all closed and stopped after the test (a member left listening would hold its
// port for the next test), and small helpers.
import { etcdserverpb_KV as KV } from '@etcdkit/client/protocol';
import { afterEach } from 'vitest';
import { EmbeddedCluster, type EmbeddedClusterMember } from '../../src/index.js';
import { b } from '../support/bytes.js';
import { RawClient } from '../support/grpc-client.js';
import { WatchConnection } from '../watch/watch-client.js';

/** The members of a 3-member cluster, for `const [m0, m1, m2] = c.members as ThreeMembers`. */
export type ThreeMembers = [EmbeddedClusterMember, EmbeddedClusterMember, EmbeddedClusterMember];

/** Options of `EmbeddedCluster.start`. */
export type ClusterOptions = Parameters<typeof EmbeddedCluster.start>[0];

/** The running test's cluster and clients; see `clusterFixture`. */
export interface ClusterFixture {
  /** Starts the test's cluster (as EmbeddedCluster.start, virtual clock typed); stopped after the test. */
  start: typeof EmbeddedCluster.start;
  /** A raw gRPC client of `member`, closed after the test. */
  clientOf(member: EmbeddedClusterMember): RawClient;
  /** A connection for Watch streams to `member`, closed after the test. */
  watchConnectionOf(member: EmbeddedClusterMember): WatchConnection;
  /** `closable` (a stream, a client), closed after the test. */
  closeAfter<T extends { close(): void }>(closable: T): T;
}

/**
 * Call once inside a `describe`: registers the afterEach that closes every client the test opened
 * and stops its cluster.
 */
export function clusterFixture(): ClusterFixture {
  let cluster: EmbeddedCluster | undefined;
  const opened: { close(): void }[] = [];

  afterEach(async () => {
    for (const client of opened.splice(0)) client.close();
    await cluster?.stop();
    cluster = undefined;
  });

  // Plain functions, not methods: tests destructure them and pass them around (`members.map(clientOf)`).
  const closeAfter = <T extends { close(): void }>(closable: T): T => {
    opened.push(closable);
    return closable;
  };
  return {
    // The cast keeps EmbeddedCluster.start's overloads (a virtual clock is typed as one).
    start: (async (options?: ClusterOptions) => {
      cluster = await EmbeddedCluster.start(options);
      return cluster;
    }) as typeof EmbeddedCluster.start,
    clientOf: (member) => closeAfter(new RawClient(member.endpoint)),
    watchConnectionOf: (member) => closeAfter(new WatchConnection(member.endpoint)),
    closeAfter,
  };
}

/** Puts `key` = `value` (as text) through `client`. */
export function putText(client: RawClient, key: string, value: string) {
  return client.unary(KV.Put, { key: b(key), value: b(value) });
}

export function sleep(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
