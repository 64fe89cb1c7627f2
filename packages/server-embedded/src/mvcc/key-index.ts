// The history of one key, shaped like etcd's keyIndex: a list of generations. A generation runs
// from the put that created the key to the delete (tombstone) that ended it; the last generation is
// the live one, or empty when the key is currently deleted. A key's version counts the puts of its
// current generation, and its create revision is the first revision of that generation.
import { compareRevisions, type Revision } from './revision.js';

/** What the index knows of a key at some revision. */
export interface KeyState {
  /** The revision of the key's latest change at or below the revision asked for. */
  readonly modified: Revision;
  /** The revision that created the key's generation. */
  readonly created: Revision;
  /** Number of puts in the generation up to `modified`, starting at 1. */
  readonly version: number;
}

class Generation {
  /** Puts in this generation so far, including ones compacted away. */
  version = 0;
  created: Revision = { main: 0, sub: 0 };
  /** Revisions still in history, ascending; the last one is the tombstone if the generation ended. */
  revisions: Revision[] = [];

  get isEmpty(): boolean {
    return this.revisions.length === 0;
  }

  /** Index of the latest revision with main <= `atRevision`, or -1. */
  latestAtOrBelow(atRevision: number): number {
    for (let i = this.revisions.length - 1; i >= 0; i--) {
      if (this.revisions[i]!.main <= atRevision) return i;
    }
    return -1;
  }
}

/** Every revision of one key still in history, grouped into generations. */
export class KeyIndex {
  readonly key: Uint8Array;
  private modified: Revision = { main: 0, sub: 0 };
  private generations: Generation[] = [new Generation()];

  constructor(key: Uint8Array) {
    this.key = key;
  }

  /** True when nothing of the key is left: it was deleted and its history compacted away. */
  get isEmpty(): boolean {
    return this.generations.length === 1 && this.generations[0]!.isEmpty;
  }

  /** Records a put at `revision`, which must be above every revision recorded so far. */
  put(revision: Revision): void {
    if (compareRevisions(revision, this.modified) <= 0) {
      throw new Error(
        `key index: put at ${revision.main}.${revision.sub} is not after the last change`,
      );
    }
    const generation = this.generations[this.generations.length - 1]!;
    if (generation.isEmpty) generation.created = revision;
    generation.revisions.push(revision);
    generation.version++;
    this.modified = revision;
  }

  /**
   * Restores the key's oldest kept change, read back from a snapshot whose older history was
   * compacted away (etcd's keyIndex.restore): its generation began at `created` and counted
   * `version` puts up to `modified`. A kept tombstone (one exactly at the compaction revision)
   * restores an ended generation. Only for a key with nothing recorded yet.
   */
  restore(created: Revision, modified: Revision, version: number, tombstone: boolean): void {
    if (!this.isEmpty) throw new Error('key index: restoring a key that already has history');
    const generation = this.generations[0]!;
    generation.created = tombstone ? modified : created;
    generation.revisions = [modified];
    generation.version = tombstone ? 1 : version;
    this.modified = modified;
    if (tombstone) this.generations.push(new Generation());
  }

  /**
   * Records a delete at `revision`: the tombstone ends the current generation and an empty one
   * starts. Returns false (and records nothing) when the key is not live.
   */
  tombstone(revision: Revision): boolean {
    if (this.generations[this.generations.length - 1]!.isEmpty) return false;
    this.put(revision);
    this.generations.push(new Generation());
    return true;
  }

  /** The key's state at `atRevision`, or undefined when it did not exist then. */
  get(atRevision: number): KeyState | undefined {
    const generation = this.generationAt(atRevision);
    if (generation === undefined) return undefined;
    const i = generation.latestAtOrBelow(atRevision);
    if (i === -1) return undefined;
    return {
      modified: generation.revisions[i]!,
      created: generation.created,
      // Puts after `modified` in the same generation are not counted.
      version: generation.version - (generation.revisions.length - 1 - i),
    };
  }

  /** The generation the key was in at `atRevision`; undefined if it was deleted then. */
  private generationAt(atRevision: number): Generation | undefined {
    const last = this.generations.length - 1;
    for (let i = last; i >= 0; i--) {
      const generation = this.generations[i]!;
      if (generation.isEmpty) continue;
      // A finished generation whose tombstone is at or below the revision: deleted by then.
      if (i !== last && generation.revisions[generation.revisions.length - 1]!.main <= atRevision) {
        return undefined;
      }
      if (generation.revisions[0]!.main <= atRevision) return generation;
    }
    return undefined;
  }

  /**
   * Drops the history a compaction at `atRevision` removes: every generation that ended before it,
   * and in the generation alive at it every revision older than the one visible at it. The
   * revision visible at `atRevision` survives (a tombstone exactly at it too, so that history from
   * the compaction revision on stays complete). Each dropped revision is passed to `onDrop`.
   */
  compact(atRevision: number, onDrop: (revision: Revision) => void): void {
    let first = 0;
    while (first < this.generations.length - 1) {
      const generation = this.generations[first]!;
      const tombstone = generation.revisions[generation.revisions.length - 1]!;
      if (tombstone.main >= atRevision) break;
      for (const revision of generation.revisions) onDrop(revision);
      first++;
    }
    const kept = this.generations[first]!;
    const visible = kept.latestAtOrBelow(atRevision);
    if (visible > 0) {
      for (const revision of kept.revisions.slice(0, visible)) onDrop(revision);
      kept.revisions = kept.revisions.slice(visible);
    }
    this.generations = this.generations.slice(first);
  }
}
