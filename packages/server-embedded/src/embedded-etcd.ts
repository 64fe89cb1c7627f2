// The embedded server: an in-process etcd member serving the etcd v3 gRPC API on 127.0.0.1.

import type { AuthStore } from './auth/auth-store.js';
import type { Clock } from './clock.js';
import { type MemberIdentity, randomId } from './consensus/member-identity.js';
import { EtcdServerError } from './errors.js';
import {
  type EtcdVersion,
  type EtcdVersionTraits,
  etcdVersionTraits,
  parseEtcdVersion,
} from './etcd-version.js';
import type { FaultInjector } from './faults/fault-injector.js';
import type { LeaseTable } from './lease/lease-table.js';
import { createLogger, type LoggerOption, type ServerLogger } from './logger.js';
import type { AutoCompactionOptions } from './maintenance/auto-compaction.js';
import { ClusterCore } from './member/cluster-core.js';
import type { Member } from './member/member.js';
import { MemberServer } from './member/member-server.js';
import type { ClockOption } from './member/member-services.js';
import type { MvccStore } from './mvcc/store.js';
import { formatClientUrl } from './net/client-urls.js';
import type { ServerTlsOptions } from './net/server-tls.js';
import { persistCoreState } from './persistence/core-state.js';
import { DataDir } from './persistence/data-dir.js';
import type { VirtualClock } from './virtual-clock.js';
import type { WatchableStore } from './watch/watchable-store.js';

/** Options of {@link EmbeddedEtcd.start}. Every limit defaults to etcd's default. */
export interface EmbeddedEtcdOptions {
  /**
   * Port to listen on, on 127.0.0.1. Default 0: a free port chosen by the system. Not together
   * with {@link listenClientUrls}.
   */
  readonly port?: number;
  /**
   * URLs to listen on for clients (`--listen-client-urls`): `http://` or `https://` (needs
   * {@link tls}), an IP address or `localhost`, a port (0: a free one); or `unix:///absolute/path`
   * or `unix://relative/path`, plaintext on a unix socket (a stale socket file there, one nothing
   * answers on, is replaced; the file is removed when the server stops listening). Default
   * `http://127.0.0.1:0`, or `https://` with {@link tls}.
   */
  readonly listenClientUrls?: readonly string[];
  /**
   * URLs MemberList reports for this member (`--advertise-client-urls`). Default: the URLs
   * listened on, with the ports actually bound.
   */
  readonly advertiseClientUrls?: readonly string[];
  /**
   * Serve clients over TLS, and with a CA or `clientCertAuth` mutual TLS (see ServerTlsOptions).
   * With `clientCertAuth` and auth enabled, a call without a token is the user its client
   * certificate's common name names, as etcd's `--client-cert-auth` does.
   */
  readonly tls?: ServerTlsOptions;
  /**
   * Seconds an auth token lives unused (`--auth-token-ttl`); every call presenting it starts the
   * time again. On the server's clock, so virtual time expires tokens too. Default 300.
   */
  readonly authTokenTtlSeconds?: number;
  /**
   * Where the server logs: `'silent'` (default), a level (`'info'`, `'debug'`...: JSON lines on
   * stderr, like etcd's), or a function receiving every line.
   */
  readonly logger?: LoggerOption;
  /**
   * Auto-compaction (`--auto-compaction-mode`, `--auto-compaction-retention`), on the server's
   * clock. Default: none.
   */
  readonly autoCompaction?: AutoCompactionOptions;
  /**
   * Directory to keep the server's state in (`--data-dir`), created if missing. The store with
   * all its history, compactions, leases, alarms, members and the raft term survive a restart
   * of the process, and no acknowledged change is lost in a crash (see "Persistence" in
   * docs/embedded-server.md). Default: none, the server is purely in memory and touches no file.
   * Its member and cluster ids, once written there, win over {@link clusterId} and
   * {@link memberId}. The files are this server's own format: a directory holding anything else
   * (a real etcd's `member/`) fails the start with {@link DataDirForeignError}, untouched.
   */
  readonly dataDir?: string;
  /**
   * Log records between two snapshots of the data dir (etcd's `--snapshot-count`); each
   * snapshot lets the log before it go. Default 10,000.
   */
  readonly snapshotCount?: number;
  /**
   * How the data dir's log reaches the disk: `true` (default), changes that arrive together share
   * one fsync (group commit); `false`, one fsync per change (slower under load; for comparison).
   */
  readonly groupCommit?: boolean;
  /** Member name (`--name`). Default `"default"`. */
  readonly name?: string;
  /** Most operations in one list of a txn (`--max-txn-ops`). Default 128. */
  readonly maxTxnOps?: number;
  /**
   * Largest write request, in bytes (`--max-request-bytes`). Default 1.5 MiB. gRPC refuses
   * messages over this plus 512 KiB outright (ResourceExhausted).
   */
  readonly maxRequestBytes?: number;
  /**
   * Backend quota (`--quota-backend-bytes`), in bytes. Default 2 GiB; 0 means the default and a
   * negative value no quota, as in etcd. When the estimated database size reaches it, writes raise
   * the NOSPACE alarm and fail.
   */
  readonly quotaBackendBytes?: number;
  /**
   * The server's time, which lease expiry and other timers run on: `'real'` (default), `'virtual'`
   * (a fresh {@link VirtualClock} at 0 that only moves when `server.clock.advance(ms)` is called),
   * or any {@link Clock}.
   */
  readonly clock?: ClockOption;
  /**
   * Shortest lease TTL, in seconds; shorter grants are raised to it. Default 2, etcd's with its
   * default election timeout (ceil(1.5 x 1 s)).
   */
  readonly minLeaseTtl?: number;
  /** How often expired leases are looked for, in ms of the clock. Default 500, as in etcd. */
  readonly leaseCheckIntervalMs?: number;
  /**
   * The etcd version the server answers as: Status' version and every behaviour that differs
   * between etcd releases (watch progress, the compaction-boundary delete, Status fields, the RPCs
   * a version has, error codes). `'3.4'` and `'3.5'` are checked against etcd 3.4.23 and 3.5.30;
   * `'3.6'` follows etcd's source; `'3.7'` is etcd's main branch, the only one with RangeStream.
   * Pick the version you deploy. Default {@link DEFAULT_ETCD_VERSION} (`'3.5'`). Anything else
   * fails the start with {@link UnknownEtcdVersionError}.
   */
  readonly etcdVersion?: EtcdVersion;
  /**
   * The release Status reports, when it should differ from the chosen version's (e.g. `'3.5.21'`);
   * only the text changes. Default: the release {@link etcdVersion} was checked against.
   */
  readonly version?: string;
  /** Cluster id of response headers. Default: random per server. */
  readonly clusterId?: bigint;
  /** Member id of response headers. Default: random per server. */
  readonly memberId?: bigint;
  /**
   * Interval of watch progress notifications, in ms (`--experimental-watch-progress-notify-interval`).
   * Default 10 minutes; shorter than 100 ms is raised to 100 ms, as etcd does.
   */
  readonly watchProgressNotifyIntervalMs?: number;
}

/** Options of {@link EmbeddedEtcd.restart}. */
export interface RestartOptions {
  /** How long the server stays down (not listening) before it listens again, in ms. Default 0. */
  readonly downtimeMs?: number;
}

/** An etcd v3 server running inside this process: in memory, or kept on disk with `dataDir`. */
export class EmbeddedEtcd {
  /** The client URL, `http://127.0.0.1:PORT` (`https://` with TLS); the first listened on. */
  readonly endpoint: string;
  /** Every client URL listened on, for clients that take a list. */
  readonly endpoints: readonly string[];
  /** The port of {@link endpoint}; 0 when it is a unix socket. */
  readonly port: number;
  /** The etcd release the server claims (Status' `version`), e.g. `3.5.30`. */
  readonly version: string;
  /** The etcd version the server answers as (its behaviour), e.g. `3.5`. */
  readonly etcdVersion: EtcdVersion;
  /** What that version's behaviour is, switch by switch (for tests and the HTTP endpoints). */
  readonly etcdVersionTraits: EtcdVersionTraits;
  /** Ids and URLs the server reports for itself. */
  readonly member: MemberIdentity;
  /** The MVCC store behind the KV API. */
  readonly store: MvccStore;
  /** The leases and the keys attached to them (for tests that look inside). */
  readonly leases: LeaseTable;
  /** The server's time; a {@link VirtualClock} when started with `clock: 'virtual'`. */
  readonly clock: Clock;
  /** The watchers of the Watch service, over {@link store} (tests may count them). */
  readonly watchable: WatchableStore;
  /** Users, roles, permissions and tokens (the Auth service's state; tests may look inside). */
  readonly auth: AuthStore;
  /** Fault injection: delays, failures, pause, leader change and more (see FaultInjector). */
  readonly faults: FaultInjector;
  /** The data dir the state is kept in; undefined for a server purely in memory. */
  readonly dataDir: string | undefined;
  // A cluster of one: the shared core, and its only member, which always leads.
  readonly #cluster: ClusterCore;
  readonly #self: Member;
  readonly #journal: DataDir | undefined;
  readonly #logger: ServerLogger;
  // Restarts and the stop run one after the other, so a stop never races a listen.
  #lifecycle: Promise<void> = Promise.resolve();
  #stopped: Promise<void> | undefined;

  private constructor(init: {
    cluster: ClusterCore;
    self: Member;
    logger: ServerLogger;
    journal: DataDir | undefined;
  }) {
    const { cluster, self } = init;
    this.#cluster = cluster;
    this.#self = self;
    this.#logger = init.logger;
    this.version = cluster.version;
    this.etcdVersion = cluster.traits.version;
    this.etcdVersionTraits = cluster.traits;
    this.member = self.identity;
    this.store = cluster.core.store;
    this.leases = cluster.core.leaseTable;
    this.watchable = self.watchable;
    this.auth = cluster.core.auth;
    this.clock = cluster.core.clock;
    this.faults = self.faults;
    this.#journal = init.journal;
    this.dataDir = init.journal?.path;
    const urls = self.network.listeners.urls;
    this.endpoints = urls.map(formatClientUrl);
    this.endpoint = this.endpoints[0]!;
    this.port = urls[0]!.port;
    cluster.startLeaderWork();
  }

  /** Starts a server with a fresh, empty store (revision 1). */
  static start(
    options: EmbeddedEtcdOptions & { readonly clock: 'virtual' | VirtualClock },
  ): Promise<EmbeddedEtcd & { readonly clock: VirtualClock }>;
  static start(options?: EmbeddedEtcdOptions): Promise<EmbeddedEtcd>;
  static async start(options: EmbeddedEtcdOptions = {}): Promise<EmbeddedEtcd> {
    const traits = etcdVersionTraits(parseEtcdVersion(options.etcdVersion));
    const maxRequestBytes = options.maxRequestBytes ?? 1.5 * 1024 * 1024;
    const logger = createLogger(options.logger);
    // Read back before listening, so that recovery below is synchronous like the rest of start().
    const dataDir =
      options.dataDir === undefined
        ? undefined
        : await DataDir.open({
            path: options.dataDir,
            newMember: {
              clusterId: options.clusterId ?? randomId(),
              memberId: options.memberId ?? randomId(),
            },
            snapshotCount: options.snapshotCount,
            groupCommit: options.groupCommit,
            logger,
          });
    // A failed listen (a port in use) must not leave the server object holding resources. The
    // handlers are registered below before any request can arrive: nothing from here to the end
    // of start() waits, so no connection is served in between.
    const network = await MemberServer.open({ ...options, maxRequestBytes }, logger).catch(
      async (error: unknown) => {
        await dataDir?.close();
        throw error;
      },
    );
    const member: MemberIdentity = {
      clusterId: dataDir?.ids.clusterId ?? options.clusterId ?? randomId(),
      memberId: dataDir?.ids.memberId ?? options.memberId ?? randomId(),
      name: options.name ?? 'default',
      // etcd's default --initial-advertise-peer-urls; the embedded server has no peer listener.
      peerUrls: ['http://localhost:2380'],
      clientUrls: network.advertisedUrls,
    };
    const cluster = new ClusterCore({
      ...options,
      member,
      maxRequestBytes,
      clientCertAuth: options.tls?.clientCertAuth === true,
      traits,
      logger,
    });
    if (dataDir !== undefined) {
      try {
        recoverInto(dataDir, cluster, logger);
      } catch (error) {
        await network.abandon();
        await dataDir.close();
        throw error;
      }
      network.gate.setBarrier(() => dataDir.barrier());
    }
    // The only member always leads; leadership can only "move" to itself.
    const self = cluster.assemble(member, network, {
      leaderView: {
        leader: () => member.memberId,
        moveLeader: (targetId) => {
          if (targetId !== member.memberId) throw new EtcdServerError('BAD_LEADER_TRANSFEREE');
        },
      },
      dropConnections: () => embedded.dropConnections(),
      electLeader: () => cluster.nextTerm(),
    });
    logger.info('started etcd server', {
      'etcd-version': cluster.version,
      name: member.name,
      'member-id': member.memberId.toString(16),
      'cluster-id': member.clusterId.toString(16),
      'listen-client-urls': network.listeners.urls.map(formatClientUrl),
      'advertise-client-urls': member.clientUrls,
    });
    const embedded: EmbeddedEtcd = new EmbeddedEtcd({ cluster, self, logger, journal: dataDir });
    logger.info('ready to serve client requests', { endpoints: embedded.endpoints });
    return embedded;
  }

  /** Connections from clients open now. */
  get connectionCount(): number {
    return this.#self.connectionCount;
  }

  /**
   * Restarts the server, keeping its data: the store, revision, leases, members and alarms. Clients
   * see a real disconnect: the listener and every connection are closed, calls in flight fail,
   * watch and keep-alive streams end; after `downtimeMs` the server listens again on the same
   * port(s) and clients reconnect. As on an etcd restart, the member wins a new election (the
   * raft term goes up by one) and every lease gets its full TTL again.
   */
  restart(options: RestartOptions = {}): Promise<void> {
    if (this.#stopped !== undefined) return Promise.reject(new Error('the server is stopped'));
    const restarted = this.#lifecycle.then(() => this.#restartNow(options.downtimeMs ?? 0));
    this.#lifecycle = restarted.catch(() => {});
    return restarted;
  }

  /**
   * Destroys every client connection now and keeps listening: clients reconnect, calls in flight
   * fail, streams end. Returns how many connections were dropped.
   */
  dropConnections(): number {
    const dropped = this.#self.dropConnections();
    this.#logger.info('dropped client connections', { connections: dropped });
    return dropped;
  }

  /** Stops listening and closes every connection; calls in flight fail. Safe to call twice. */
  stop(): Promise<void> {
    this.#stopped ??= this.#lifecycle.then(async () => {
      this.#logger.info('stopping etcd server', { name: this.member.name });
      this.#cluster.stopLeaderWork();
      await this.#self.close();
      // Last: what was acknowledged is on disk already; this flushes the rest and unlocks the dir.
      await this.#journal?.close();
      this.#logger.info('stopped etcd server', { name: this.member.name });
    });
    return this.#stopped;
  }

  async #restartNow(downtimeMs: number): Promise<void> {
    if (this.#stopped !== undefined) return;
    this.#logger.info('restarting etcd server', { 'downtime-ms': downtimeMs });
    this.#cluster.stopLeaderWork();
    await this.#self.stopListening();
    // A restarted etcd has forgotten its simple tokens (they live in memory only).
    this.auth.forgetTokens();
    if (downtimeMs > 0) await new Promise((resolve) => setTimeout(resolve, downtimeMs));
    if (this.#stopped !== undefined) return;
    // A restarted etcd member wins a new election (the raft term goes up by one) and, leader
    // again, gives every lease its full TTL (lessor Promote): nothing could have kept a lease
    // alive while the member was down.
    this.#cluster.electLeader();
    this.#cluster.startLeaderWork();
    await this.#self.listen();
    this.#logger.info('ready to serve client requests', { endpoints: this.endpoints });
  }

  /**
   * Expires a lease now (fault injection): it is revoked at once, its keys deleted in a revision of
   * their own, as if its TTL had run out. False when there is no such lease.
   */
  expireLease(leaseId: bigint): boolean {
    return this.#cluster.core.services.leases.expire(leaseId);
  }

  /** Stops the server, for `await using server = await EmbeddedEtcd.start()`. */
  [Symbol.asyncDispose](): Promise<void> {
    return this.stop();
  }
}

/**
 * Registers every state of the core with the data dir and reads it back; from then on the data dir
 * logs every new term. Every state kept there registers (a StateJournal) before it recovers.
 */
function recoverInto(dataDir: DataDir, cluster: ClusterCore, logger: ServerLogger): void {
  const { core } = cluster;
  const persisted = persistCoreState(dataDir, {
    store: core.store,
    leases: core.leaseTable,
    alarms: core.services.alarms,
    membership: core.services.membership,
    proposals: core.proposals,
    clock: core.clock,
    auth: core.auth,
  });
  dataDir.recover();
  persisted.recovered();
  cluster.recordTermsWith(() => persisted.raft.electLeader());
  logger.info('recovered the data dir', {
    'data-dir': dataDir.path,
    revision: core.store.revision,
    'compact-revision': core.store.compactRevision,
    leases: core.leaseTable.size,
    'replayed-records': dataDir.replayedRecords,
  });
}
