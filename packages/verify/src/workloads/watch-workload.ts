// The watch workload: writers put unique values (a register history), watchers follow the keys,
// each closing its watch now and then and resuming from the revision after the last it saw.
import { Etcd } from '@etcdkit/client';
import type { RegisterInput, RegisterOutput } from '../models/register.js';
import type { WatchedEvent, WatchStream } from '../models/watch.js';
import { Recorder } from '../recorder.js';
import { RecordingRegister } from '../recording-register.js';
import type { Target } from '../target.js';
import type { KvWorkloadOptions, WorkloadRun } from './kv-workloads.js';
import { ProcessIds, runWithFaults, sleep } from './runner.js';

/** A watch run: the writes, and what every watch stream delivered. */
export interface WatchRun extends WorkloadRun<RegisterInput, RegisterOutput> {
  readonly streams: readonly WatchStream[];
}

/**
 * Half the clients (at least one) put to a few keys, the others watch the prefix with progress
 * notifications, restarting their watch every 0.3-1 s from the revision after the last they saw.
 */
export async function watchWorkload(target: Target, options: KvWorkloadOptions): Promise<WatchRun> {
  const recorder = new Recorder<RegisterInput, RegisterOutput>();
  const keys = Array.from({ length: options.keys ?? 3 }, (_, i) => `${options.prefix}k${i}`);
  const ids = new ProcessIds();
  const streams: WatchStream[] = [];
  const writers = Math.max(1, Math.floor(options.clients / 2));
  const setup = new Etcd({ endpoints: [...target.endpoints] });
  const from = (await setup.range({ key: options.prefix })).header.revision + 1n;
  await setup.close();
  let n = 0;
  const faults = await runWithFaults(target, options, options, async (index, signal) => {
    const etcd = new Etcd({
      endpoints: [...target.endpoints],
      callTimeoutMs: options.callTimeoutMs ?? 1_000,
      dialTimeoutMs: 1_000,
    });
    try {
      if (index < writers) {
        let register = new RecordingRegister(etcd, recorder, ids.fresh());
        while (!signal.aborted) {
          await register.put(keys[n % keys.length]!, `${index}.${n++}`).catch(() => {
            register = new RecordingRegister(etcd, recorder, ids.fresh());
          });
        }
        return;
      }
      const process = ids.fresh();
      let next = from;
      let previous: number | undefined;
      while (!signal.aborted) {
        const items: WatchStream['items'][number][] = [];
        const stream: WatchStream = {
          process,
          prefix: options.prefix,
          startRevision: next,
          ...(previous === undefined ? {} : { resumes: previous }),
          items,
        };
        previous = streams.push(stream) - 1;
        const watcher = etcd.watch({
          prefix: options.prefix,
          startRevision: next,
          progressNotify: true,
        });
        watcher.on('batch', (batch) =>
          items.push({
            type: 'batch',
            revision: batch.revision,
            events: batch.events.map(
              (e): WatchedEvent => ({
                type: e.type,
                key: e.kv.keyText(),
                value: e.type === 'put' ? e.kv.text() : undefined,
                modRevision: e.kv.modRevision,
              }),
            ),
          }),
        );
        watcher.on('progress', (progress) =>
          items.push({ type: 'progress', revision: progress.revision }),
        );
        watcher.on('error', () => {});
        await sleep(300 + Math.random() * 700, signal);
        await watcher.close();
        if (watcher.revision >= next) next = watcher.revision + 1n;
      }
    } finally {
      await etcd.close();
    }
  });
  return { history: recorder.history(), faults, streams };
}
