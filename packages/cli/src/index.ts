/**
 * @etcdkit/cli: the `etcdkit` command (lock, elect, semaphore: run a command on exactly one
 * machine), and its exit statuses for programs that run it.
 *
 * @module @etcdkit/cli
 */
export { CliError, type CliErrorCode } from './errors.js';
export { EXIT_STATUS, type ExitStatus } from './exit-status.js';
export type { Io } from './io.js';
export { runEtcdkit } from './run.js';
