// Maintenance.Downgrade (etcd 3.5+): VALIDATE checks a target version, ENABLE records a downgrade
// job for it, CANCEL ends the job. The target must be the minor version just below the cluster's
// (membership.AllowedDowngradeVersion); the cluster version is the server's major.minor, as the
// embedded server's members all run one version. The job is the member's own and is not persisted
// (etcd keeps it in its cluster state); this server never downgrades anything.

import type { Clock } from '../clock.js';
import { EtcdServerError } from '../errors.js';
import type { EtcdVersionTraits } from '../etcd-version.js';

/** DowngradeRequest.DowngradeAction */
const Action = { VALIDATE: 0, ENABLE: 1, CANCEL: 2 } as const;

/**
 * How long etcd 3.5 holds an ENABLE or CANCEL it applied without answering: its request timeout
 * with the default timing (5 s + 2 x the 1 s election timeout, ReqTimeout in config.go).
 */
export const UNANSWERED_DOWNGRADE_MS = 7_000;

/** A major.minor version. */
interface ClusterVersion {
  readonly major: number;
  readonly minor: number;
}

/** One member's downgrade job, answering as the version `traits` describe. */
export class DowngradeJob {
  readonly #traits: EtcdVersionTraits;
  readonly #clock: Clock;
  readonly #cluster: ClusterVersion;
  /** The target of the enabled job, as etcd records it (major.minor.0); none when disabled. */
  #target: string | undefined;

  constructor(traits: EtcdVersionTraits, clock: Clock) {
    this.#traits = traits;
    this.#clock = clock;
    const [major, minor] = traits.version.split('.').map(Number);
    this.#cluster = { major: major ?? 3, minor: minor ?? 0 };
  }

  /** The enabled job's target version (Status's downgrade_info from 3.6), if any. */
  get target(): string | undefined {
    return this.#target;
  }

  /** Runs a Downgrade request; resolves with the response's version or fails as etcd does. */
  async handle(action: number, version: string, signal: AbortSignal): Promise<string> {
    switch (action) {
      case Action.VALIDATE:
        return this.#validate(version);
      case Action.ENABLE: {
        this.#validate(version);
        const { major, minor } = parseTarget(version);
        this.#target = `${major}.${minor}.0`;
        await this.#answered(signal);
        return this.#clusterVersion();
      }
      case Action.CANCEL:
        return this.#cancel(signal);
      default:
        throw new EtcdServerError('UNKNOWN_METHOD');
    }
  }

  #validate(version: string): string {
    const target = parseTarget(version);
    if (target.major !== this.#cluster.major || target.minor !== this.#cluster.minor - 1) {
      throw new EtcdServerError('INVALID_DOWNGRADE_TARGET_VERSION');
    }
    if (this.#target !== undefined) throw new EtcdServerError('DOWNGRADE_IN_PROCESS');
    return this.#clusterVersion();
  }

  async #cancel(signal: AbortSignal): Promise<string> {
    if (this.#target === undefined) {
      // 3.6 logs the failed cancel and answers anyway (v3.6.14 v3_server.go line 1155).
      if (this.#traits.downgrade === '3.6') return this.#clusterVersion();
      throw new EtcdServerError('NO_INFLIGHT_DOWNGRADE');
    }
    this.#target = undefined;
    await this.#answered(signal);
    return this.#clusterVersion();
  }

  /**
   * etcd 3.5's applier returns no result for the job's raft entry (v3.5.30 server/etcdserver/
   * apply.go line 154), so the call waits out the request timeout though the job changed.
   */
  async #answered(signal: AbortSignal): Promise<void> {
    if (this.#traits.downgrade !== '3.5') return;
    await new Promise<void>((resolve) => {
      const timer = this.#clock.setTimer(resolve, UNANSWERED_DOWNGRADE_MS);
      signal.addEventListener('abort', () => {
        timer.cancel();
        resolve();
      });
    });
    throw new EtcdServerError('REQUEST_TIMEOUT');
  }

  /** The cluster version as the response names it: 3.5 `3.5.0`, 3.6 on `3.6` (version.Cluster). */
  #clusterVersion(): string {
    const { major, minor } = this.#cluster;
    return this.#traits.downgrade === '3.6' ? `${major}.${minor}` : `${major}.${minor}.0`;
  }
}

/**
 * A target version as etcd reads it (convertToClusterVersion): a semantic version, or major.minor
 * taken as major.minor.0; anything else is WRONG_DOWNGRADE_VERSION_FORMAT.
 */
function parseTarget(version: string): ClusterVersion {
  const parts = semverCore(version) ?? semverCore(`${version}.0`);
  if (parts === undefined) throw new EtcdServerError('WRONG_DOWNGRADE_VERSION_FORMAT');
  return { major: parts[0], minor: parts[1] };
}

/** major.minor.patch of go-semver's NewVersion (pre-release and metadata allowed, then dropped). */
function semverCore(version: string): [number, number, number] | undefined {
  const match = /^(\d+)\.(\d+)\.(\d+)(?:-[0-9A-Za-z.-]+)?(?:\+[0-9A-Za-z.-]+)?$/.exec(version);
  if (match === null) return undefined;
  return [Number(match[1]), Number(match[2]), Number(match[3])];
}
