/**
 * @etcdkit/otel: OpenTelemetry tracing and metrics for the etcdkit client, on the application's own
 * OpenTelemetry SDK (`@opentelemetry/api` is a peer dependency).
 *
 * @module @etcdkit/otel
 */
export { combineHooks } from './hooks.js';
export { EtcdAttributes, EtcdMetrics } from './names.js';
export {
  type EtcdTelemetry,
  type EtcdTelemetryOptions,
  etcdTelemetry,
  type NamedLock,
} from './telemetry.js';
