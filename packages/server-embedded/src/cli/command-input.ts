// stdin as the input of a simulated cluster's commands, read only while this process may read it.
// Started with `&` from an interactive shell, a process keeps the terminal as stdin but is not in
// its foreground job: its first read would stop it (SIGTTIN, the shell's "Stopped (tty input)"),
// and a cluster stopped that way serves nobody. So a background process waits, looking a few times
// a second, and starts reading once it is the foreground job (`fg`: a running job brought to the
// foreground gets no signal to wait for). A stdin that is a pipe, a file or /dev/null is read at
// once; its end only ends the commands.
import { readFileSync } from 'node:fs';
import { PassThrough, type Readable } from 'node:stream';
import { isatty } from 'node:tty';

/** How often a background process looks whether it became the foreground job, in ms. */
const FOREGROUND_CHECK_MS = 250;

/**
 * A stream of what arrives on stdin from the moment this process may read it. Destroying it lets
 * go of stdin (so it keeps nothing alive).
 */
export function openCommandInput(): Readable {
  const input = new PassThrough();
  const onError = (error: Error): void => {
    input.destroy(error);
  };
  let piped = false;
  let waiting: NodeJS.Timeout | undefined;
  const begin = (): boolean => {
    if (!mayReadStdin()) return false;
    clearInterval(waiting);
    piped = true;
    // pipe() does not pass errors on: a stdin that fails (EIO from a terminal gone) ends the
    // commands with the error, instead of crashing the process.
    process.stdin.on('error', onError);
    process.stdin.pipe(input);
    return true;
  };
  if (!begin()) waiting = setInterval(begin, FOREGROUND_CHECK_MS).unref();
  input.once('close', () => {
    clearInterval(waiting);
    if (piped) {
      process.stdin.off('error', onError);
      process.stdin.unpipe(input);
      process.stdin.pause();
    }
  });
  return input;
}

/**
 * False when stdin is a terminal whose foreground job is another one: reading it now would stop
 * this process. True wherever that cannot be told (no /proc, as on macOS).
 */
function mayReadStdin(): boolean {
  if (!isatty(0)) return true;
  let stat: string;
  try {
    stat = readFileSync('/proc/self/stat', 'utf8');
  } catch {
    return true;
  }
  return inForegroundJob(stat);
}

/**
 * Whether a process whose /proc/<pid>/stat is `stat` is in its terminal's foreground job: its
 * process group (field 5) is the terminal's foreground group (field 8). The command name (field 2,
 * in parentheses) may hold spaces and parentheses, so fields are counted after its last `)`.
 */
export function inForegroundJob(stat: string): boolean {
  const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
  // From field 3 on: state, ppid, pgrp, session, tty_nr, tpgid.
  const processGroup = fields[2];
  const foregroundGroup = fields[5];
  return processGroup === undefined || processGroup === foregroundGroup;
}
