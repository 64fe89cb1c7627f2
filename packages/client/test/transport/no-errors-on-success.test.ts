// A successful call makes no Error (each captures a stack: microseconds per call): unary calls with
// and without the caller's signal, and a watch's creation, events and close, on the h2 and http2
// transports. Errors are counted where they are constructed: a debugger breakpoint on every call of
// Error, its native subclasses, DOMException and Error.captureStackTrace (a subclass's super() call
// counts). The in-process embedded server's are counted too: its successful calls make none either.
import { Session } from 'node:inspector';
import { describeEachBackend } from '@etcdkit/testkit';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { AbortedError } from '../../src/errors.js';
import { Etcd } from '../../src/etcd.js';
import { cmp } from '../../src/kv/compare.js';
import { op } from '../../src/kv/op.js';
import type { TransportName } from '../../src/transport/select.js';

/** Counts the errors constructed while `counting`, with the stacks of where they were made. */
class ErrorCounter {
  readonly #session = new Session();
  counting = false;
  readonly made: string[] = [];

  async start(): Promise<void> {
    const session = this.#session;
    session.connect();
    session.on('Debugger.paused', ({ params }) => {
      if (this.counting) {
        // Under vitest's module runner the frames have names and lines, not urls.
        const frames = params.callFrames.slice(0, 8);
        this.made.push(
          frames.map((f) => `${f.functionName}:${f.location.lineNumber + 1}`).join(' < '),
        );
      }
      session.post('Debugger.resume');
    });
    await this.#post('Debugger.enable');
    for (const expression of [
      'Error',
      'TypeError',
      'RangeError',
      'SyntaxError',
      'DOMException',
      'Error.captureStackTrace',
    ]) {
      const { result } = (await this.#post('Runtime.evaluate', { expression })) as {
        result: { objectId: string };
      };
      await this.#post('Debugger.setBreakpointOnFunctionCall', { objectId: result.objectId });
    }
  }

  /** The errors `action` made. */
  async count(action: () => Promise<void>): Promise<string[]> {
    this.made.length = 0;
    this.counting = true;
    try {
      await action();
    } finally {
      this.counting = false;
    }
    return [...this.made];
  }

  stop(): void {
    this.#session.disconnect();
  }

  #post(method: string, params?: object): Promise<unknown> {
    return new Promise((resolve, reject) => {
      this.#session.post(method, params, (error, result) =>
        error ? reject(error) : resolve(result),
      );
    });
  }
}

const TRANSPORTS: readonly TransportName[] = ['h2', 'http2'];

describeEachBackend('a successful call', ({ backend, prefix }) => {
  const counter = new ErrorCounter();
  beforeAll(() => counter.start());
  afterAll(() => counter.stop());

  it('is counted: an error made while counting is seen, with where it was made', async () => {
    const made = await counter.count(async () => {
      void new AbortedError();
    });
    expect(made).toHaveLength(1);
    expect(made[0]).toMatch(/^EtcdError:\d+ < AbortedError:\d+ < /);
  });

  describe.each(TRANSPORTS)('over %s', (transport) => {
    let etcd: Etcd;
    let writer: Etcd;
    const k = (name: string) => `${prefix()}${name}`;
    beforeAll(() => {
      etcd = new Etcd({ endpoints: backend().endpoints, transport });
      writer = new Etcd({ endpoints: backend().endpoints, transport });
    });
    afterAll(async () => {
      await etcd?.close();
      await writer?.close();
    });

    it('makes no error in a unary call, with or without the caller signal', async () => {
      const signal = new AbortController().signal;
      const calls = async () => {
        await etcd.put(k('a'), 'v');
        await etcd.put(k('a'), 'v', { signal });
        expect((await etcd.get(k('a'), { signal }))?.text()).toBe('v');
        expect((await etcd.range({ prefix: k('') })).kvs).toHaveLength(1);
        const txn = await etcd
          .txn()
          .if(cmp.value(k('a'), '==', 'v'))
          .then(op.put(k('b'), 'w'), op.delete(k('c')))
          .commit();
        expect(txn.succeeded).toBe(true);
        expect((await etcd.delete(k('b'))).deleted).toBe(1n);
      };
      // The first calls connect (and compile): what a call costs once connected is counted.
      await calls();
      expect(await counter.count(calls)).toEqual([]);
    });

    it("makes no error in a watch's creation, its events and its close", async () => {
      const watchEvents = async (key: string) => {
        const watcher = etcd.watch({ key });
        const seen: string[] = [];
        let wake: (() => void) | undefined;
        watcher.on('put', (event) => {
          seen.push(event.kv.text());
          wake?.();
        });
        await watcher.ready();
        await writer.put(key, '1');
        await writer.put(key, '2');
        while (seen.length < 2) await new Promise<void>((resolve) => (wake = resolve));
        await watcher.close();
        expect(seen).toEqual(['1', '2']);
      };
      await watchEvents(k('w0'));
      expect(await counter.count(() => watchEvents(k('w1')))).toEqual([]);
    });
  });
});
