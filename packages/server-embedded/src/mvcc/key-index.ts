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

/**
 * A key's state as plain numbers, filled in place by {@link KeyIndex.locate} and
 * {@link KeyIndex.visible}: the readers that walk many changes (ranges, history replay) reuse one
 * and make no objects per change (issue 28.1).
 */
export class KeyPosition {
  modifiedMain = 0;
  modifiedSub = 0;
  createdMain = 0;
  createdSub = 0;
  version = 0;
}

// A store holds one KeyIndex per key, so its parts are plain numbers in as few objects as possible
// (issue 28.1): revisions as main and sub numbers (subs only once a sub is not 0, which takes a txn
// changing several keys), a lone revision or generation without an array around it, created as
// two numbers, no Revision objects kept.
class Generation {
  /** Puts in this generation so far, including ones compacted away. */
  version = 0;
  createdMain = 0;
  createdSub = 0;
  /**
   * Main revisions still in history, ascending (a single one as a number); the last one is the
   * tombstone if the generation ended.
   */
  #mains: number | number[] | undefined;
  /** The sub of each revision; undefined while every one is 0. */
  #subs: number[] | undefined;

  get count(): number {
    const mains = this.#mains;
    return mains === undefined ? 0 : typeof mains === 'number' ? 1 : mains.length;
  }

  get isEmpty(): boolean {
    return this.#mains === undefined;
  }

  main(i: number): number {
    const mains = this.#mains!;
    return typeof mains === 'number' ? mains : mains[i]!;
  }

  sub(i: number): number {
    return this.#subs?.[i] ?? 0;
  }

  revision(i: number): Revision {
    return { main: this.main(i), sub: this.sub(i) };
  }

  push(revision: Revision): void {
    const mains = this.#mains;
    if (mains === undefined) this.#mains = revision.main;
    else if (typeof mains === 'number') this.#mains = [mains, revision.main];
    else mains.push(revision.main);
    if (revision.sub !== 0 && this.#subs === undefined) {
      this.#subs = new Array<number>(this.count - 1).fill(0);
    }
    this.#subs?.push(revision.sub);
  }

  /** Drops the first `count` revisions (not all of them). */
  dropFirst(count: number): void {
    const rest = (this.#mains as number[]).slice(count);
    this.#mains = rest.length === 1 ? rest[0]! : rest;
    if (this.#subs !== undefined) this.#subs = this.#subs.slice(count);
  }

  /** Index of the latest revision with main <= `atRevision`, or -1. */
  latestAtOrBelow(atRevision: number): number {
    const mains = this.#mains;
    if (mains === undefined) return -1;
    if (typeof mains === 'number') return mains <= atRevision ? 0 : -1;
    // Reads at the current revision ask for the last one: no search.
    let high = mains.length - 1;
    if (mains[high]! <= atRevision) return high;
    let low = 0;
    while (low <= high) {
      const middle = (low + high) >>> 1;
      if (mains[middle]! <= atRevision) low = middle + 1;
      else high = middle - 1;
    }
    return high;
  }

  /** Fills `into` with the state at revision `i`. */
  fill(i: number, into: KeyPosition): void {
    into.modifiedMain = this.main(i);
    into.modifiedSub = this.sub(i);
    into.createdMain = this.createdMain;
    into.createdSub = this.createdSub;
    // Puts after revision `i` in this generation are not counted.
    into.version = this.version - (this.count - 1 - i);
  }
}

/** Every revision of one key still in history, grouped into generations. */
export class KeyIndex {
  readonly key: Uint8Array;
  #modifiedMain = 0;
  #modifiedSub = 0;
  /** The generations, oldest first (a single one without an array); the last is the live one. */
  #generations: Generation | Generation[] = new Generation();

  constructor(key: Uint8Array) {
    this.key = key;
  }

  /** True when nothing of the key is left: it was deleted and its history compacted away. */
  get isEmpty(): boolean {
    return this.#generationCount === 1 && this.#generation(0).isEmpty;
  }

  /** Records a put at `revision`, which must be above every revision recorded so far. */
  put(revision: Revision): void {
    if (compareRevisions(revision, { main: this.#modifiedMain, sub: this.#modifiedSub }) <= 0) {
      throw new Error(
        `key index: put at ${revision.main}.${revision.sub} is not after the last change`,
      );
    }
    const generation = this.#generation(this.#generationCount - 1);
    if (generation.isEmpty) {
      generation.createdMain = revision.main;
      generation.createdSub = revision.sub;
    }
    generation.push(revision);
    generation.version++;
    this.#modifiedMain = revision.main;
    this.#modifiedSub = revision.sub;
  }

  /**
   * Restores the key's oldest kept change, read back from a snapshot whose older history was
   * compacted away (etcd's keyIndex.restore): its generation began at `created` and counted
   * `version` puts up to `modified`. A kept tombstone (one exactly at the compaction revision)
   * restores an ended generation. Only for a key with nothing recorded yet.
   */
  restore(created: Revision, modified: Revision, version: number, tombstone: boolean): void {
    if (!this.isEmpty) throw new Error('key index: restoring a key that already has history');
    const generation = this.#generation(0);
    const from = tombstone ? modified : created;
    generation.createdMain = from.main;
    generation.createdSub = from.sub;
    generation.push(modified);
    generation.version = tombstone ? 1 : version;
    this.#modifiedMain = modified.main;
    this.#modifiedSub = modified.sub;
    if (tombstone) this.#startGeneration();
  }

  /**
   * Records a delete at `revision`: the tombstone ends the current generation and an empty one
   * starts. Returns false (and records nothing) when the key is not live.
   */
  tombstone(revision: Revision): boolean {
    if (this.#generation(this.#generationCount - 1).isEmpty) return false;
    this.put(revision);
    this.#startGeneration();
    return true;
  }

  /** The key's state at `atRevision`, or undefined when it did not exist then. */
  get(atRevision: number): KeyState | undefined {
    const at = new KeyPosition();
    return this.visible(atRevision, at) ? stateOf(at) : undefined;
  }

  /**
   * Fills `into` with the key's state at `atRevision`; false (and `into` untouched) when it did
   * not exist then. `get` without an object per call.
   */
  visible(atRevision: number, into: KeyPosition): boolean {
    const generation = this.#generationAt(atRevision);
    if (generation === undefined) return false;
    const i = generation.latestAtOrBelow(atRevision);
    if (i === -1) return false;
    generation.fill(i, into);
    return true;
  }

  /**
   * Fills `into` with the key's state right after its change at exactly (main, sub); false (and
   * `into` untouched) when no such change is kept. Unlike `visible`, it finds a put that a later
   * change of the same main revision overwrote (a put, then a nested txn's delete of the key).
   */
  locate(main: number, sub: number, into: KeyPosition): boolean {
    for (let g = this.#generationCount - 1; g >= 0; g--) {
      const generation = this.#generation(g);
      if (generation.isEmpty || generation.main(0) > main) continue;
      // Several changes of one main revision are possible (a put, then a nested txn's delete).
      for (let i = generation.latestAtOrBelow(main); i >= 0 && generation.main(i) === main; i--) {
        if (generation.sub(i) === sub) {
          generation.fill(i, into);
          return true;
        }
      }
      // An earlier generation may still end at `main` (the put and delete before a new put).
    }
    return false;
  }

  /** The generation the key was in at `atRevision`; undefined if it was deleted then. */
  #generationAt(atRevision: number): Generation | undefined {
    const last = this.#generationCount - 1;
    for (let i = last; i >= 0; i--) {
      const generation = this.#generation(i);
      if (generation.isEmpty) continue;
      // A finished generation whose tombstone is at or below the revision: deleted by then.
      if (i !== last && generation.main(generation.count - 1) <= atRevision) {
        return undefined;
      }
      if (generation.main(0) <= atRevision) return generation;
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
    while (first < this.#generationCount - 1) {
      const generation = this.#generation(first);
      if (generation.main(generation.count - 1) >= atRevision) break;
      for (let i = 0; i < generation.count; i++) onDrop(generation.revision(i));
      first++;
    }
    const kept = this.#generation(first);
    const visible = kept.latestAtOrBelow(atRevision);
    if (visible > 0) {
      for (let i = 0; i < visible; i++) onDrop(kept.revision(i));
      kept.dropFirst(visible);
    }
    if (first > 0) {
      const rest = (this.#generations as Generation[]).slice(first);
      this.#generations = rest.length === 1 ? rest[0]! : rest;
    }
  }

  get #generationCount(): number {
    return Array.isArray(this.#generations) ? this.#generations.length : 1;
  }

  #generation(i: number): Generation {
    return Array.isArray(this.#generations) ? this.#generations[i]! : this.#generations;
  }

  #startGeneration(): void {
    const generations = this.#generations;
    if (Array.isArray(generations)) generations.push(new Generation());
    else this.#generations = [generations, new Generation()];
  }
}

function stateOf(at: KeyPosition): KeyState {
  return {
    modified: { main: at.modifiedMain, sub: at.modifiedSub },
    created: { main: at.createdMain, sub: at.createdSub },
    version: at.version,
  };
}
