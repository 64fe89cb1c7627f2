// Lock wait time, measured around the acquisition: the recipes have no hooks, and a wrapper needs
// none. The span is active while the lock is acquired, so the calls it makes become its children.
import { type Attributes, context, SpanStatusCode, type Tracer, trace } from '@opentelemetry/api';
import { failureFacts } from './call-attributes.js';
import type { Instruments } from './instruments.js';
import { EtcdAttributes as A } from './names.js';

/** Records the wait of `acquire` under `name`: a histogram point and a span. */
export async function timeLockWait<T>(
  tracer: Tracer,
  instruments: Instruments,
  name: string,
  acquire: () => Promise<T>,
): Promise<T> {
  const started = performance.now();
  const span = tracer.startSpan('etcd.lock.wait', { attributes: { [A.ETCD_LOCK_NAME]: name } });
  const attributes: Attributes = { [A.ETCD_LOCK_NAME]: name };
  try {
    return await context.with(trace.setSpan(context.active(), span), acquire);
  } catch (error) {
    const failure = failureFacts(error);
    attributes[A.ERROR_TYPE] = failure.type;
    span.setAttribute(A.ERROR_TYPE, failure.type);
    span.setStatus({ code: SpanStatusCode.ERROR, message: failure.message });
    throw error;
  } finally {
    instruments.lockWait.record((performance.now() - started) / 1000, attributes);
    span.end();
  }
}
