// What each STM isolation level does differently: where reads come from and what the commit
// checks. The four levels and their names follow etcd's Go `concurrency` package.

/**
 * How much an STM transaction is isolated from concurrent writers (strongest first):
 *
 * - `'serializable-snapshot'`: every read sees the store at one revision R (fixed by the first
 *   read); the commit fails if a key read changed since, or if a key written was modified after R
 *   (write-write conflicts are caught even for keys never read). Serializable, snapshot reads.
 * - `'serializable'`: reads at one revision R; the commit checks only the keys read. Serializable;
 *   a key written without being read may have changed since R (blind writes overwrite).
 * - `'repeatable-reads'`: each key is read at the latest revision when first read, then cached for
 *   the attempt; the commit checks the keys read. Two keys may be read at different revisions, but
 *   the commit still fails if any of them changed before it.
 * - `'read-committed'`: reads as above, no check at commit: the writes always apply, so concurrent
 *   read-modify-write cycles lose updates.
 */
export type StmIsolation =
  | 'serializable-snapshot'
  | 'serializable'
  | 'repeatable-reads'
  | 'read-committed';

/** The isolation levels, strongest first. */
export const STM_ISOLATION_LEVELS: readonly StmIsolation[] = [
  'serializable-snapshot',
  'serializable',
  'repeatable-reads',
  'read-committed',
];

/** @internal How a level reads and what its commit compares. */
export interface IsolationRules {
  /** All reads of an attempt at one revision, fixed by its first read. */
  readonly snapshotReads: boolean;
  /** The commit requires every key read to still have the mod revision that was read. */
  readonly validateReads: boolean;
  /** The commit requires every key written to be unmodified since the snapshot revision. */
  readonly validateWrites: boolean;
}

const RULES: Readonly<Record<StmIsolation, IsolationRules>> = {
  'serializable-snapshot': { snapshotReads: true, validateReads: true, validateWrites: true },
  serializable: { snapshotReads: true, validateReads: true, validateWrites: false },
  'repeatable-reads': { snapshotReads: false, validateReads: true, validateWrites: false },
  'read-committed': { snapshotReads: false, validateReads: false, validateWrites: false },
};

/** @internal The rules of a level. */
export function isolationRules(level: StmIsolation): IsolationRules {
  return RULES[level];
}
