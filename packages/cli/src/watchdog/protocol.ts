// What the supervisor and its watchdog process say to each other over the IPC channel. bigints do
// not cross it (JSON), so monotonic times travel as decimal strings.

/** Supervisor to watchdog. */
export type ToWatchdog =
  /** Start CMD in a process group of its own. */
  | {
      readonly type: 'spawn';
      readonly command: string;
      readonly args: readonly string[];
      readonly env: Readonly<Record<string, string>>;
      /** Between SIGTERM and SIGKILL, in ms. */
      readonly graceMs: number;
    }
  /** CMD must be dead by this monotonic time (ns, decimal): a keepalive confirmed the lease. */
  | { readonly type: 'deadline'; readonly killAt: string }
  /** Pass a signal to CMD's process group (SIGINT, SIGTERM, SIGHUP to the supervisor). */
  | { readonly type: 'signal'; readonly signal: NodeJS.Signals }
  /** The hold is lost: SIGTERM to CMD's group now, SIGKILL after the grace. */
  | { readonly type: 'stop' };

/** Watchdog to supervisor. */
export type FromWatchdog =
  | { readonly type: 'spawned'; readonly pid: number }
  /** CMD could not start (`code` is the errno name: ENOENT, EACCES...). */
  | { readonly type: 'spawn-failed'; readonly code: string; readonly message: string }
  /** No fresh deadline came in time: the watchdog is stopping CMD on its own. */
  | { readonly type: 'expired' }
  /** CMD exited (the watchdog exits after sending this). */
  | {
      readonly type: 'exited';
      readonly code: number | null;
      readonly signal: NodeJS.Signals | null;
    };
