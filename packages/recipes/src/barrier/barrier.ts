// A barrier: one key that, while it exists, blocks every process waiting on it. The layout and
// semantics of etcd's Go `recipe.Barrier`, with cancellable waits.
import { cmp, type KV, op } from '@etcdkit/client';
import { throwIfAborted } from '../errors.js';
import { recipeName } from '../recipe-name.js';
import { type WaitOptions, waitForDelete } from '../wait.js';

/**
 * A barrier on one key. {@link hold} creates the key (no lease: it stays until released),
 * {@link release} deletes it, and {@link wait} blocks while it exists. Any process can hold,
 * release or wait; the barrier is the key, not this object.
 *
 * @example
 * ```ts
 * const deploy = new Barrier(etcd, 'barriers/deploy');
 * await deploy.hold();            // coordinator
 * await deploy.wait({ signal });  // workers: return once it is released
 * await deploy.release();         // coordinator
 * ```
 */
export class Barrier {
  constructor(
    /** The client (or a namespace of it) the barrier lives in. */
    readonly kv: KV,
    /** The barrier's key. */
    readonly key: string,
  ) {
    recipeName('Barrier', 'key', key);
  }

  /**
   * Raises the barrier: creates the key if it does not exist. Resolves true when this call
   * created it, false when the barrier was already held (it is then left as it was).
   */
  async hold(): Promise<boolean> {
    const result = await this.kv
      .txn()
      .if(cmp.missing(this.key))
      .then(op.put(this.key, ''))
      .commit();
    return result.succeeded;
  }

  /**
   * Lowers the barrier: deletes the key, waking every waiter. Resolves true when it deleted it,
   * false when the barrier was not held.
   */
  async release(): Promise<boolean> {
    return (await this.kv.delete(this.key)).deleted > 0n;
  }

  /**
   * Resolves once the barrier is not held: at once when the key does not exist, else when it is
   * deleted. Aborting `signal` rejects with AbortedError; nothing is left behind.
   */
  async wait(options: WaitOptions = {}): Promise<void> {
    throwIfAborted(options.signal);
    const read = await this.kv.range({ key: this.key, keysOnly: true, signal: options.signal });
    const held = read.kvs[0];
    if (held === undefined) return;
    // From the read's revision on: a release between the read and the watch is still seen.
    await waitForDelete(this.kv, this.key, read.header.revision, {
      signal: options.signal,
      createRevision: held.createRevision,
    });
  }
}
