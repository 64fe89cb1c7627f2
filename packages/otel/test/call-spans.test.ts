// A span per unary call and the call metrics: names and attributes as an exporter receives them,
// on the embedded server and on real etcd.
import { cmp, Etcd, OutcomeUnknownError, op, prefixEnd, toText } from '@etcdkit/client';
import { describeEachBackend, freePort, startTcpProxy } from '@etcdkit/testkit';
import { context, SpanKind, SpanStatusCode, trace } from '@opentelemetry/api';
import { AsyncLocalStorageContextManager } from '@opentelemetry/context-async-hooks';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import { EtcdMetrics } from '../src/index.js';
import { hostPort, Recorder } from './otel-support.js';

describeEachBackend('OpenTelemetry: call spans and metrics', ({ backend, prefix }) => {
  let recorder: Recorder;
  const clients: Etcd[] = [];
  /** An instrumented client with the telemetry's hooks, closed after the test. */
  const client = (endpoints = backend().endpoints, r = recorder) => {
    const etcd = r.telemetry.instrument(new Etcd(r.telemetry.withHooks({ endpoints })));
    clients.push(etcd);
    return etcd;
  };
  const server = () => {
    const { host, port } = hostPort(backend().endpoints[0]!);
    return { 'server.address': host, 'server.port': port };
  };
  const kv = { 'rpc.system': 'grpc', 'rpc.service': 'etcdserverpb.KV' };

  beforeEach(() => {
    recorder = new Recorder();
  });
  afterEach(async () => {
    for (const etcd of clients.splice(0)) await etcd.close();
    await recorder.shutdown();
  });

  it('gives a put then a get two client spans with the method, key, revision and retries', async () => {
    const etcd = client();
    const key = `${prefix()}a`;
    const put = await etcd.put(key, 'v1');
    expect((await etcd.get(key))?.text()).toBe('v1');
    const revision = Number(put.header.revision);

    const spans = recorder.spans();
    expect(spans.map((s) => s.name)).toEqual(['etcdserverpb.KV/Put', 'etcdserverpb.KV/Range']);
    expect(spans.map((s) => s.kind)).toEqual([SpanKind.CLIENT, SpanKind.CLIENT]);
    expect(spans.map((s) => s.status.code)).toEqual([SpanStatusCode.UNSET, SpanStatusCode.UNSET]);
    expect(spans[0]!.attributes).toEqual({
      ...kv,
      'rpc.method': 'Put',
      ...server(),
      'rpc.grpc.status_code': 0,
      'etcd.retry_policy': 'write',
      'etcd.key': key,
      'etcd.retries': 0,
      'etcd.revision': revision,
    });
    expect(spans[1]!.attributes).toEqual({
      ...kv,
      'rpc.method': 'Range',
      ...server(),
      'rpc.grpc.status_code': 0,
      'etcd.retry_policy': 'read',
      'etcd.key': key,
      'etcd.retries': 0,
      'etcd.revision': revision,
    });

    const durations = await recorder.histogram(EtcdMetrics.CALL_DURATION);
    expect(durations.map((p) => p.attributes)).toEqual([
      { ...kv, 'rpc.method': 'Put', ...server(), 'etcd.retry_policy': 'write' },
      { ...kv, 'rpc.method': 'Range', ...server(), 'etcd.retry_policy': 'read' },
    ]);
    expect(durations.map((p) => p.value.count)).toEqual([1, 1]);
    for (const { value } of durations) expect(value.sum).toBeGreaterThan(0);
  });

  it('names prefix and range requests, and a txn’s outcome', async () => {
    const etcd = client();
    const base = prefix();
    await etcd.put(`${base}x/1`, '1');
    await etcd.range({ prefix: `${base}x/` });
    await etcd.delete({ key: `${base}a`, end: `${base}c` });
    const txn = await etcd
      .txn()
      .if(cmp.version(`${base}x/1`, '==', 0n))
      .then(op.put(`${base}x/1`, '2'))
      .commit();
    expect(txn.succeeded).toBe(false);

    const [, range, deleted, txnSpan] = recorder.spans();
    expect(range!.attributes).toMatchObject({
      'etcd.key': `${base}x/`,
      'etcd.range_end': toText(prefixEnd(new TextEncoder().encode(`${base}x/`))),
      'etcd.prefix': true,
    });
    expect(range!.attributes['etcd.range_end']).toBe(`${base}x0`);
    expect(deleted!.name).toBe('etcdserverpb.KV/DeleteRange');
    expect(deleted!.attributes).toMatchObject({
      'etcd.key': `${base}a`,
      'etcd.range_end': `${base}c`,
      'etcd.prefix': false,
    });
    expect(txnSpan!.name).toBe('etcdserverpb.KV/Txn');
    expect(txnSpan!.attributes['etcd.txn.succeeded']).toBe(false);
    expect(txnSpan!.attributes['etcd.key']).toBeUndefined();
  });

  it('leaves keys off the spans with recordKeys: false', async () => {
    const quiet = new Recorder({ recordKeys: false });
    try {
      await client(backend().endpoints, quiet).put(`${prefix()}secret`, 'v');
      const [span] = quiet.spans();
      expect(Object.keys(span!.attributes).filter((name) => name.startsWith('etcd.key'))).toEqual(
        [],
      );
      expect(span!.attributes['etcd.revision']).toBeGreaterThan(0);
    } finally {
      await quiet.shutdown();
    }
  });

  it('counts a retry and a failover when the first endpoint refuses connections', async () => {
    const dead = await freePort();
    const etcd = client([`http://127.0.0.1:${dead}`, ...backend().endpoints]);
    await etcd.get(`${prefix()}a`);

    const [span] = recorder.spans();
    expect(span!.attributes).toMatchObject({ 'etcd.retries': 1, ...server() });
    const retries = await recorder.counter(EtcdMetrics.RETRIES);
    expect(retries).toEqual([
      {
        attributes: {
          ...kv,
          'rpc.method': 'Range',
          'server.address': '127.0.0.1',
          'server.port': dead,
          'error.type': 'UNAVAILABLE',
        },
        value: 1,
      },
    ]);
    expect(await recorder.counter(EtcdMetrics.FAILOVERS)).toEqual([
      { attributes: server(), value: 1 },
    ]);
  });

  it('marks a write cut off in flight outcome-unknown, and a read that timed out not', async () => {
    const proxy = await startTcpProxy(backend().endpoints[0]!);
    try {
      const etcd = client([proxy.endpoint]);
      await etcd.get(`${prefix()}warm-up`);
      proxy.pause();
      const write = await etcd.put(`${prefix()}w`, 'v', { timeoutMs: 300 }).catch((e) => e);
      expect(write).toBeInstanceOf(OutcomeUnknownError);
      const read = await etcd.get(`${prefix()}w`, { timeoutMs: 300 }).catch((e) => e);
      expect(read.code).toBe('DEADLINE_EXCEEDED');

      const [, put, get] = recorder.spans();
      expect(put!.status).toEqual({
        code: SpanStatusCode.ERROR,
        message: write.message,
      });
      expect(put!.attributes).toMatchObject({
        'rpc.method': 'Put',
        'etcd.key': `${prefix()}w`,
        'error.type': 'OUTCOME_UNKNOWN',
        'etcd.outcome_unknown': true,
        'rpc.grpc.status_code': write.grpcStatus,
        'etcd.retries': 0,
      });
      expect(put!.attributes['etcd.revision']).toBeUndefined();
      expect(put!.events.map((e) => e.name)).toEqual(['exception']);
      expect(get!.attributes).toMatchObject({
        'rpc.method': 'Range',
        'error.type': 'DEADLINE_EXCEEDED',
        'etcd.outcome_unknown': false,
        'rpc.grpc.status_code': 4,
      });
      const failed = (await recorder.histogram(EtcdMetrics.CALL_DURATION)).filter(
        (p) => p.attributes['error.type'] !== undefined,
      );
      expect(failed.map((p) => [p.attributes['rpc.method'], p.attributes['error.type']])).toEqual([
        ['Put', 'OUTCOME_UNKNOWN'],
        ['Range', 'DEADLINE_EXCEEDED'],
      ]);
    } finally {
      proxy.resume();
      await proxy.close();
    }
  });

  it('keeps the application’s own hooks running beside the telemetry’s', async () => {
    const seen: string[] = [];
    const etcd = recorder.telemetry.instrument(
      new Etcd(
        recorder.telemetry.withHooks({
          endpoints: backend().endpoints,
          hooks: { onCall: (event) => seen.push(event.method) },
        }),
      ),
    );
    clients.push(etcd);
    recorder.telemetry.instrument(etcd);
    await etcd.put(`${prefix()}a`, '1');
    expect(seen).toEqual(['/etcdserverpb.KV/Put']);
    // Instrumenting twice still gives one span per call.
    expect(recorder.spans().map((s) => s.name)).toEqual(['etcdserverpb.KV/Put']);
    expect(recorder.spans()[0]!.attributes['etcd.retries']).toBe(0);
  });

  describe('with a context manager', () => {
    const manager = new AsyncLocalStorageContextManager();
    beforeEach(() => {
      context.setGlobalContextManager(manager.enable());
    });
    afterEach(() => {
      context.disable();
    });

    it('makes a call inside an application span its child, and the hooks see the call span', async () => {
      let active: string | undefined;
      const etcd = recorder.telemetry.instrument(
        new Etcd(
          recorder.telemetry.withHooks({
            endpoints: backend().endpoints,
            hooks: { onCall: () => (active = trace.getActiveSpan()?.spanContext().spanId) },
          }),
        ),
      );
      clients.push(etcd);
      const tracer = recorder.tracerProvider.getTracer('app');
      await tracer.startActiveSpan('handle request', async (parent) => {
        await etcd.put(`${prefix()}a`, '1');
        parent.end();
      });
      const put = recorder.spansNamed('etcdserverpb.KV/Put')[0]!;
      const parent = recorder.spansNamed('handle request')[0]!;
      expect(put.parentSpanContext?.spanId).toBe(parent.spanContext().spanId);
      expect(put.spanContext().traceId).toBe(parent.spanContext().traceId);
      expect(active).toBe(put.spanContext().spanId);
    });
  });
});
