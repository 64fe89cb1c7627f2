// The client hooks that feed the metrics, and tell an instrumented call's span what only the
// connection knows: how many attempts it took and which endpoint answered.
import type { AsyncLocalStorage } from 'node:async_hooks';
import type { ConnectionHooks } from '@etcdkit/client';
import type { Attributes } from '@opentelemetry/api';
import { endpointAttributes, failureFacts, methodAttributes } from './call-attributes.js';
import type { Instruments } from './instruments.js';
import { EtcdAttributes as A } from './names.js';

/**
 * What the hooks learn about the call in flight. The instrumented `unary` runs each call in its own
 * record; the hooks run synchronously inside the call, so they find it in the async context.
 */
export interface CallRecord {
  /** The gRPC path, to tell the call from a nested Authenticate the connection runs for it. */
  readonly path: string;
  attempts: number | undefined;
  endpoint: string | undefined;
}

export function metricHooks(
  instruments: Instruments,
  calls: AsyncLocalStorage<CallRecord>,
): ConnectionHooks {
  return {
    onCall(event) {
      const record = calls.getStore();
      if (record?.path === event.method) {
        record.attempts = event.attempts;
        record.endpoint = event.endpoint;
      }
      const attributes: Attributes = {
        ...methodAttributes(event.method),
        ...endpointAttributes(event.endpoint),
        [A.ETCD_RETRY_POLICY]: event.policy,
      };
      if (event.error) attributes[A.ERROR_TYPE] = failureFacts(event.error).type;
      instruments.callDuration.record(event.durationMs / 1000, attributes);
    },
    onRetry(event) {
      instruments.retries.add(1, {
        ...methodAttributes(event.method),
        ...endpointAttributes(event.endpoint),
        [A.ERROR_TYPE]: failureFacts(event.error).type,
      });
    },
    onEndpointSwitch(event) {
      instruments.failovers.add(1, endpointAttributes(event.to));
    },
    onLeaseKeepAlive(event) {
      instruments.keepAliveDuration.record(event.roundTripMs / 1000);
    },
    onLeaseLost(error) {
      instruments.leaseLost.add(1, { [A.ETCD_LEASE_LOST_REASON]: error.reason });
    },
  };
}

type Hook = (event: never) => void;

/**
 * Hooks that call each of `list`'s hooks of the same name in turn, so the telemetry's hooks and an
 * application's own run side by side. One that throws does not keep the others from running.
 */
export function combineHooks(...list: readonly (ConnectionHooks | undefined)[]): ConnectionHooks {
  const byName = new Map<string, Hook[]>();
  for (const hooks of list) {
    for (const [name, hook] of Object.entries(hooks ?? {})) {
      if (typeof hook !== 'function') continue;
      const hooksOfName = byName.get(name) ?? [];
      hooksOfName.push(hook as Hook);
      byName.set(name, hooksOfName);
    }
  }
  const combined: Record<string, Hook> = {};
  for (const [name, hooks] of byName) {
    combined[name] =
      hooks.length === 1
        ? hooks[0]!
        : (event: never) => {
            for (const hook of hooks) {
              try {
                hook(event);
              } catch {
                // As the client does with a hook that throws: ignored, the next one still runs.
              }
            }
          };
  }
  return combined as ConnectionHooks;
}
