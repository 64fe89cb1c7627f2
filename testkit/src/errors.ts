/** Why an etcd process did not become ready. */
export type EtcdStartFailure =
  /** The process exited before it answered. */
  | 'ETCD_EXITED'
  /** It did not answer within the start timeout. */
  | 'ETCD_START_TIMEOUT'
  /** The process could not be spawned at all. */
  | 'ETCD_SPAWN_FAILED';

/** An etcd server (or cluster member) failed to start; carries the end of its log. */
export class EtcdStartError extends Error {
  override readonly name = 'EtcdStartError';
  readonly code: EtcdStartFailure;
  /** Last lines etcd wrote to stdout and stderr. */
  readonly logTail: string;

  constructor(code: EtcdStartFailure, message: string, logTail: string, options?: ErrorOptions) {
    const tail =
      logTail === '' ? ' (etcd wrote nothing)' : `\n--- last lines of etcd output ---\n${logTail}`;
    super(`${message}${tail}`, options);
    this.code = code;
    this.logTail = logTail;
  }

  /** Whether etcd failed because a port was taken between our probe and its bind. */
  get addressInUse(): boolean {
    return this.code === 'ETCD_EXITED' && /address already in use/i.test(this.logTail);
  }
}

/** A test backend was asked for but cannot run here. */
export class BackendUnavailableError extends Error {
  override readonly name = 'BackendUnavailableError';
  readonly code = 'BACKEND_UNAVAILABLE';
  readonly backend: string;

  constructor(backend: string, reason: string, options?: ErrorOptions) {
    super(`backend ${backend} is unavailable: ${reason}`, options);
    this.backend = backend;
  }
}
