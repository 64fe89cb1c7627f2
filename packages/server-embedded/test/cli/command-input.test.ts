// When the CLI may read its terminal: only as the terminal's foreground job, else the read would
// stop the process (SIGTTIN); told from /proc/<pid>/stat.
import { describe, expect, it } from 'vitest';
import { inForegroundJob } from '../../src/cli/command-input.js';

// pid (comm) state ppid pgrp session tty_nr tpgid flags...
const stat = (comm: string, pgrp: number, tpgid: number): string =>
  `4242 (${comm}) S 4000 ${pgrp} 4000 34816 ${tpgid} 4194304 1 0 0 0\n`;

describe('inForegroundJob', () => {
  it('is true when the process group is the terminal foreground group', () => {
    expect(inForegroundJob(stat('node', 4242, 4242))).toBe(true);
  });

  it('is false for a job started in the background of an interactive shell', () => {
    expect(inForegroundJob(stat('node', 4242, 4000))).toBe(false);
  });

  it('counts the fields after the command name, which may hold spaces and parentheses', () => {
    expect(inForegroundJob(stat('my (odd) name', 4242, 4000))).toBe(false);
    expect(inForegroundJob(stat('my (odd) name', 4242, 4242))).toBe(true);
  });
});
