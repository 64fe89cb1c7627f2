// The exit statuses of the etcdkit command. A supervised command's own status is passed through,
// so etcdkit's own statuses sit where commands rarely put theirs: sysexits(3) values, and 79 (just
// past sysexits' range) for the one that matters most to a caller, a lost hold.
import { constants } from 'node:os';

/**
 * Statuses `etcdkit` exits with when the supervised command's own status is not the answer. When
 * CMD ran to its end, `etcdkit` exits with CMD's status (128 + N when a signal N ended it).
 */
export const EXIT_STATUS = {
  /** Held and released without a command (`etcdkit lock NAME`, interrupted), or `--help`. */
  ok: 0,
  /** Bad flags or arguments (EX_USAGE). */
  usage: 64,
  /** etcd could not be reached or refused a call (connection, TLS, authentication) (EX_UNAVAILABLE). */
  unavailable: 69,
  /** etcdkit failed itself, e.g. its watchdog process died (EX_SOFTWARE). */
  internal: 70,
  /** `--wait-timeout` passed before the lock, leadership or permit was held (EX_TEMPFAIL). */
  waitTimeout: 75,
  /**
   * The hold was lost while CMD ran (lease expired or revoked, key deleted, keepalive stalled, or
   * the watchdog stopped CMD because the supervisor could not confirm its lease in time): CMD's
   * process group was stopped.
   */
  lost: 79,
  /** CMD exists but could not be executed (as a shell reports it). */
  cannotExecute: 126,
  /** CMD was not found (as a shell reports it). */
  notFound: 127,
} as const;

/** One of {@link EXIT_STATUS}'s values. */
export type ExitStatus = (typeof EXIT_STATUS)[keyof typeof EXIT_STATUS];

/** The shell's status for a process ended by `signal`: 128 + its number. */
export function signalStatus(signal: NodeJS.Signals): number {
  return 128 + (constants.signals[signal] ?? 0);
}
