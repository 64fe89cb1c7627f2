// Revisions are plain numbers inside the store: a store would need 2^53 writes (about 285 years at
// a million writes per second) before they lose precision. They become bigint only at the wire.

/**
 * A position in the store's history. `main` is the revision one write request produced (every
 * change of a txn shares it); `sub` orders the changes within that request, in op order.
 */
export interface Revision {
  readonly main: number;
  readonly sub: number;
}

/** Orders revisions by main, then sub. */
export function compareRevisions(a: Revision, b: Revision): number {
  return a.main - b.main || a.sub - b.sub;
}
