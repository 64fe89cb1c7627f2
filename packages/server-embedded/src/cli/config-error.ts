// The failure of a command line that parsed but that the server cannot run with.

/** A flag value the server cannot run with (exit code 1, as etcd's own checks). */
export class ConfigError extends Error {
  /** Stable identifier of the failure. */
  readonly code = 'INVALID_CONFIG';

  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'ConfigError';
  }
}
