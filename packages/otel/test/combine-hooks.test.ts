// combineHooks: the telemetry's hooks and an application's own run side by side.
import type { CallEvent } from '@etcdkit/client';
import { describe, expect, it } from 'vitest';
import { combineHooks } from '../src/index.js';

const call: CallEvent = {
  method: '/etcdserverpb.KV/Range',
  policy: 'read',
  endpoint: '127.0.0.1:2379',
  attempts: 1,
  durationMs: 1,
};

describe('combineHooks', () => {
  it('calls every hook of a name in turn, even after one threw', () => {
    const seen: string[] = [];
    const hooks = combineHooks(
      {
        onCall: () => {
          seen.push('first');
          throw new Error('a broken hook');
        },
      },
      undefined,
      { onCall: (event) => seen.push(`second ${event.method}`), onRetry: () => seen.push('retry') },
    );
    hooks.onCall?.(call);
    expect(seen).toEqual(['first', 'second /etcdserverpb.KV/Range']);
    expect(Object.keys(hooks).sort()).toEqual(['onCall', 'onRetry']);
  });

  it('passes a hook that has no company through as it is', () => {
    const onCall = (_event: CallEvent) => {};
    expect(combineHooks({ onCall }, {}).onCall).toBe(onCall);
  });
});
