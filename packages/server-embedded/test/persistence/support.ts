// Temporary data dirs for tests, removed afterwards, and the log lines a server writes.
import { mkdtemp, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import type { LogEntry } from '../../src/index.js';

/** A fresh empty directory under the system's temp dir. */
export function temporaryDir(): Promise<string> {
  return mkdtemp(join(tmpdir(), 'etcdkit-data-'));
}

/** Removes a directory made by {@link temporaryDir}. */
export function removeDir(path: string): Promise<void> {
  return rm(path, { recursive: true, force: true });
}

/** A logger option that keeps every line, and the lines kept. */
export function captureLog(): { readonly lines: LogEntry[]; readonly sink: (e: LogEntry) => void } {
  const lines: LogEntry[] = [];
  return { lines, sink: (entry) => lines.push(entry) };
}
