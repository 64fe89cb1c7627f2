// A wrapper around a KV that records each call as an operation of a register history.
import { cmp, type GetOptions, type KV, op, type TxnResult } from '@etcdkit/client';
import type { RegisterInput, RegisterOutput } from './models/register.js';
import type { Recorder } from './recorder.js';

/**
 * The register operations of one process on a KV (an `Etcd` client or a namespace of one), each
 * recorded in `recorder`. Errors are rethrown after being recorded.
 */
export class RecordingRegister {
  readonly #kv: KV;
  readonly #recorder: Recorder<RegisterInput, RegisterOutput>;
  readonly #getOptions: GetOptions;

  /**
   * @param kv the client the process uses
   * @param recorder where operations go
   * @param process the process number in the history
   * @param getOptions options of every get, e.g. `{ serializable: true }`
   */
  constructor(
    kv: KV,
    recorder: Recorder<RegisterInput, RegisterOutput>,
    readonly process: number,
    getOptions: GetOptions = {},
  ) {
    this.#kv = kv;
    this.#recorder = recorder;
    this.#getOptions = getOptions;
  }

  /** Reads `key`: its value (undefined when absent) and mod_revision (0 when absent). */
  get(key: string, signal?: AbortSignal): Promise<RegisterOutput & { type: 'get' }> {
    return this.#recorder.run(this.process, { type: 'get', key }, 'read', async () => {
      const kv = await this.#kv.get(key, { ...this.#getOptions, signal });
      return { type: 'get', value: kv?.text(), modRevision: kv?.modRevision ?? 0n };
    }) as Promise<RegisterOutput & { type: 'get' }>;
  }

  /** Writes `key`; answers with the revision of the write. */
  put(key: string, value: string, signal?: AbortSignal): Promise<RegisterOutput> {
    return this.#recorder.run(this.process, { type: 'put', key, value }, 'write', async () => {
      const r = await this.#kv.put(key, value, { signal });
      return { type: 'put', revision: r.header.revision };
    });
  }

  /** Puts `value` if `key` holds `expect` (absent when undefined), in one txn. */
  cas(
    key: string,
    expect: string | undefined,
    value: string,
    signal?: AbortSignal,
  ): Promise<RegisterOutput> {
    const input: RegisterInput = { type: 'cas', key, expect, value };
    return this.#recorder.run(this.process, input, 'write', async () => {
      const guard =
        expect === undefined ? cmp.version(key, '==', 0n) : cmp.value(key, '==', expect);
      const r = await this.#kv
        .txn()
        .if(guard)
        .then(op.put(key, value))
        .else(op.get(key))
        .commit({ signal });
      return casOutput(r);
    });
  }

  /**
   * Puts `value` if `key`'s mod_revision is `expectRevision`; `expectValue` is the value read
   * with that revision (the model needs it when a revision is not known).
   */
  casRevision(
    key: string,
    expectRevision: bigint,
    expectValue: string | undefined,
    value: string,
    signal?: AbortSignal,
  ): Promise<RegisterOutput> {
    const input: RegisterInput = { type: 'casRevision', key, expectRevision, expectValue, value };
    return this.#recorder.run(this.process, input, 'write', async () => {
      const r = await this.#kv
        .txn()
        .if(cmp.modRevision(key, '==', expectRevision))
        .then(op.put(key, value))
        .else(op.get(key))
        .commit({ signal });
      return casOutput(r);
    });
  }
}

/** A CAS txn's answer; when it failed, what its else branch read. */
function casOutput(r: TxnResult): RegisterOutput {
  if (r.succeeded) return { type: 'cas', succeeded: true, revision: r.header.revision };
  const response = r.responses[0];
  const kv = response?.kind === 'range' ? response.kvs[0] : undefined;
  return {
    type: 'cas',
    succeeded: false,
    revision: r.header.revision,
    current: { value: kv?.text(), modRevision: kv?.modRevision ?? 0n },
  };
}
