// The layers of one call (net/call-middleware.ts): steps in pass the layers from the wire to the
// handler, steps out the other way, and a layer that answers passes only the layers under it.
import { describe, expect, it } from 'vitest';
import { GrpcCode } from '../../src/errors.js';
import {
  type CallArrival,
  type CallMiddleware,
  type CallSteps,
  type MiddlewareStatus,
  stackLayers,
} from '../../src/net/call-middleware.js';

/** A layer that records every step it sees under `name` and passes it on at once. */
function recording(name: string, seen: string[]): CallSteps {
  return {
    arrive: (next) => {
      seen.push(`${name} arrive`);
      next();
    },
    receive: (message, next) => {
      seen.push(`${name} receive ${String(message)}`);
      next();
    },
    halfClose: (next) => {
      seen.push(`${name} halfClose`);
      next();
    },
    sendMessage: (next) => {
      seen.push(`${name} sendMessage`);
      next();
    },
    sendStatus: (next) => {
      seen.push(`${name} sendStatus`);
      next();
    },
    cancelled: () => seen.push(`${name} cancelled`),
  };
}

/** Middleware whose calls record under `name`; `answers` is how its last call may answer. */
function recordingMiddleware(
  name: string,
  seen: string[],
): CallMiddleware & { answers: (status: MiddlewareStatus) => void; opened: CallArrival[] } {
  const middleware = {
    opened: [] as CallArrival[],
    answers: (_status: MiddlewareStatus): void => {},
    admitsAtOnce: () => true,
    open(call: CallArrival, answer: (status: MiddlewareStatus) => void): CallSteps {
      middleware.opened.push(call);
      middleware.answers = answer;
      return recording(name, seen);
    },
  };
  return middleware;
}

const CALL: CallArrival = {
  path: '/etcdserverpb.KV/Range',
  streaming: false,
  metadata: { get: () => [] },
};

describe('stackLayers', () => {
  it('is the wire layer itself when there is no middleware', () => {
    const wire = recording('gate', []);
    expect(stackLayers(wire, [], CALL, () => {})).toBe(wire);
  });

  it('passes steps in from the wire to the handler and steps out the other way', () => {
    const seen: string[] = [];
    const first = recordingMiddleware('first', seen);
    const second = recordingMiddleware('second', seen);
    const layers = stackLayers(recording('gate', seen), [first, second], CALL, () => {});
    layers.arrive(() => seen.push('handler arrive'));
    layers.receive('request', () => seen.push('handler receive'));
    layers.halfClose(() => seen.push('handler halfClose'));
    layers.sendMessage(() => seen.push('wire sendMessage'));
    layers.sendStatus(() => seen.push('wire sendStatus'));
    layers.cancelled();
    expect(seen).toEqual([
      'gate arrive',
      'first arrive',
      'second arrive',
      'handler arrive',
      'gate receive request',
      'first receive request',
      'second receive request',
      'handler receive',
      'gate halfClose',
      'first halfClose',
      'second halfClose',
      'handler halfClose',
      'second sendMessage',
      'first sendMessage',
      'gate sendMessage',
      'wire sendMessage',
      'second sendStatus',
      'first sendStatus',
      'gate sendStatus',
      'wire sendStatus',
      'gate cancelled',
      'first cancelled',
      'second cancelled',
    ]);
    expect(first.opened).toEqual([CALL]);
    expect(second.opened).toEqual([CALL]);
  });

  it("sends a layer's own answer through the layers under it only", () => {
    const seen: string[] = [];
    const answered: MiddlewareStatus[] = [];
    const first = recordingMiddleware('first', seen);
    const second = recordingMiddleware('second', seen);
    stackLayers(recording('gate', seen), [first, second], CALL, (status) => {
      answered.push(status);
    });
    second.answers({ code: GrpcCode.UNAVAILABLE, details: 'no leader' });
    expect(seen).toEqual(['first sendStatus', 'gate sendStatus']);
    expect(answered).toEqual([{ code: GrpcCode.UNAVAILABLE, details: 'no leader' }]);
  });

  it('lets a layer hold a step: the layers after it see it only once it passes', () => {
    const seen: string[] = [];
    let release = (): void => {};
    const holding: CallMiddleware = {
      admitsAtOnce: () => false,
      open: () => ({
        ...recording('holding', seen),
        receive: (_message, next) => {
          seen.push('holding holds');
          release = next;
        },
      }),
    };
    const after = recordingMiddleware('after', seen);
    const layers = stackLayers(recording('gate', seen), [holding, after], CALL, () => {});
    layers.receive('request', () => seen.push('handler receive'));
    expect(seen).toEqual(['gate receive request', 'holding holds']);
    release();
    expect(seen).toEqual([
      'gate receive request',
      'holding holds',
      'after receive request',
      'handler receive',
    ]);
  });
});
