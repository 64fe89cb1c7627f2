// The errors the etcdkit command reports: each with a stable code and the status it exits with.
import { EXIT_STATUS, type ExitStatus } from './exit-status.js';

/** Codes of {@link CliError}. */
export type CliErrorCode =
  | 'USAGE'
  | 'TLS_FILE'
  | 'WAIT_TIMEOUT'
  | 'WATCHDOG_FAILED'
  | 'COMMAND_NOT_FOUND'
  | 'COMMAND_NOT_EXECUTABLE';

const STATUS: Record<CliErrorCode, ExitStatus> = {
  USAGE: EXIT_STATUS.usage,
  TLS_FILE: EXIT_STATUS.usage,
  WAIT_TIMEOUT: EXIT_STATUS.waitTimeout,
  WATCHDOG_FAILED: EXIT_STATUS.internal,
  COMMAND_NOT_FOUND: EXIT_STATUS.notFound,
  COMMAND_NOT_EXECUTABLE: EXIT_STATUS.cannotExecute,
};

/** A failure of the etcdkit command itself; `exitStatus` is what the process exits with. */
export class CliError extends Error {
  override readonly name = 'CliError';
  /** The status the command exits with. */
  readonly exitStatus: ExitStatus;

  constructor(
    /** What went wrong, stable across versions. */
    readonly code: CliErrorCode,
    message: string,
    options?: { readonly cause?: unknown },
  ) {
    super(message, options);
    this.exitStatus = STATUS[code];
  }
}

/** A usage error: bad flag, missing argument. */
export function usageError(message: string): CliError {
  return new CliError('USAGE', message);
}
