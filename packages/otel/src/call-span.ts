// A span per unary call: the connection's `unary` is wrapped on the instance, so every service of the
// client (KV, Lease, Lock, recipes on top) goes through it. The call runs inside its own record and
// with its span active, so the hooks can fill in attempts and endpoint, and user hooks see the span.
import type { AsyncLocalStorage } from 'node:async_hooks';
import type { Connection } from '@etcdkit/client';
import {
  type Attributes,
  context,
  SpanKind,
  SpanStatusCode,
  type Tracer,
  trace,
} from '@opentelemetry/api';
import {
  endpointAttributes,
  failureFacts,
  keyAttributes,
  methodAttributes,
  OUTCOME_UNKNOWN,
  responseAttributes,
} from './call-attributes.js';
import type { CallRecord } from './hooks.js';
import { EtcdAttributes as A } from './names.js';

/** How calls are traced. */
export interface CallTracing {
  readonly tracer: Tracer;
  readonly calls: AsyncLocalStorage<CallRecord>;
  /** Put keys and range ends on spans. */
  readonly recordKeys: boolean;
}

/** Replaces `connection.unary` by one that traces each call. */
export function traceUnaryCalls(connection: Connection, tracing: CallTracing): void {
  const original = connection.unary.bind(connection) as Connection['unary'];
  const { tracer, calls, recordKeys } = tracing;
  const unary: Connection['unary'] = (method, request, policy, options) => {
    const parent = context.active();
    const span = tracer.startSpan(
      `${method.service}/${method.name}`,
      { kind: SpanKind.CLIENT, attributes: methodAttributes(method.path) },
      parent,
    );
    if (span.isRecording()) {
      span.setAttribute(A.ETCD_RETRY_POLICY, policy);
      if (recordKeys) span.setAttributes(keyAttributes(request));
    }
    const record: CallRecord = { path: method.path, attempts: undefined, endpoint: undefined };
    const pending = context.with(trace.setSpan(parent, span), () =>
      calls.run(record, () => original(method, request, policy, options)),
    );
    return pending.then(
      (response) => {
        if (span.isRecording()) {
          span.setAttributes({
            ...callAttributes(record),
            ...responseAttributes(response),
            [A.RPC_GRPC_STATUS_CODE]: 0,
          });
        }
        span.end();
        return response;
      },
      (error: unknown) => {
        const failure = failureFacts(error);
        const attributes: Attributes = {
          ...callAttributes(record),
          [A.ERROR_TYPE]: failure.type,
          [A.ETCD_OUTCOME_UNKNOWN]: failure.type === OUTCOME_UNKNOWN,
        };
        if (failure.grpcStatus !== undefined)
          attributes[A.RPC_GRPC_STATUS_CODE] = failure.grpcStatus;
        span.setAttributes(attributes);
        if (error instanceof Error) span.recordException(error);
        span.setStatus({ code: SpanStatusCode.ERROR, message: failure.message });
        span.end();
        throw error;
      },
    );
  };
  Object.defineProperty(connection, 'unary', { value: unary, configurable: true, writable: true });
}

/** Attempts and endpoint, when the telemetry's hooks reported them (they are installed). */
function callAttributes(record: CallRecord): Attributes {
  const attributes = endpointAttributes(record.endpoint);
  return record.attempts === undefined
    ? attributes
    : { ...attributes, [A.ETCD_RETRIES]: Math.max(0, record.attempts - 1) };
}
