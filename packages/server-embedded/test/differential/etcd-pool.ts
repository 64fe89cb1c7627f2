// Fresh etcd processes, started ahead of need: every differential sequence gets an etcd of its
// own (so revisions, compactions, HashKV and the lease list compare as they are), and the next
// one boots while the current sequence runs, which hides most of etcd's ~130 ms start.
import { type EtcdProcess, startEtcd } from '@etcdkit/testkit';

export class EtcdPool {
  private readonly ready: Promise<EtcdProcess>[] = [];
  private readonly stopping = new Set<Promise<void>>();
  private closed = false;

  /**
   * @param args etcd flags of every process
   * @param ahead how many processes to keep starting ahead
   */
  constructor(
    private readonly args: readonly string[],
    private readonly ahead = 1,
  ) {}

  /** A fresh etcd for one sequence; give it back with {@link release}. */
  async take(): Promise<EtcdProcess> {
    if (this.closed) throw new Error('the etcd pool is closed');
    this.fill();
    const next = this.ready.shift()!;
    this.fill();
    return next;
  }

  /** Stops a process taken from the pool, without making the next sequence wait for it. */
  release(etcd: EtcdProcess): void {
    const stopped = etcd.stop().finally(() => this.stopping.delete(stopped));
    this.stopping.add(stopped);
  }

  /** Stops every process the pool started. */
  async close(): Promise<void> {
    this.closed = true;
    const pending = this.ready.splice(0);
    await Promise.allSettled(pending.map(async (starting) => (await starting).stop()));
    await Promise.allSettled([...this.stopping]);
  }

  private fill(): void {
    while (this.ready.length < this.ahead) {
      const starting = startEtcd({ args: this.args });
      // A failed start is reported by take(); until then it must not count as unhandled.
      starting.catch(() => {});
      this.ready.push(starting);
    }
  }
}
