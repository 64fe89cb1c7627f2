// Middleware of the server's own gRPC engine: what stands between the wire and a handler and may
// hold, pass or answer each step of a call (a simulated cluster's leader gate). The call gate
// (faults/call-gate.ts) is always the first, nearest the wire; middleware comes after it, in order.
// A step goes in through the layers first to last and out last to first, as grpc-go's and
// grpc-js's server interceptors chain.
import type { GrpcCode } from '../errors.js';
import type { CallMetadata } from './h2/routes.js';

/** A status a layer answers a call with instead of its handler. */
export interface MiddlewareStatus {
  readonly code: GrpcCode;
  readonly details: string;
}

/** A call as it arrives, before any of its request messages. */
export interface CallArrival {
  /** The method's path, `/package.Service/Method`. */
  readonly path: string;
  /** True for a method that streams requests or responses. */
  readonly streaming: boolean;
  readonly metadata: CallMetadata;
}

/**
 * What one layer does with one call. Each step passes on by calling `next`, at once, later, or
 * never (the layer answered the call, or was told it ended).
 */
export interface CallSteps {
  /** The call's headers arrived. */
  arrive(next: () => void): void;
  /** A request message, decoded. */
  receive(message: unknown, next: () => void): void;
  /** The client ended its side of a streaming call. */
  halfClose(next: () => void): void;
  /** A response message is about to leave. */
  sendMessage(next: () => void): void;
  /** The call's status is about to leave. */
  sendStatus(next: () => void): void;
  /** The call is over: cancelled, its deadline passed, its connection lost, or a layer answered. */
  cancelled(): void;
}

/** A middleware of the engine: one instance serves every call of one member. */
export interface CallMiddleware {
  /**
   * True when a unary call arriving now would pass every step untouched: it may then skip the
   * layer altogether (the engine's unary fast path).
   */
  admitsAtOnce(): boolean;
  /**
   * The steps for one call. `answer` ends the call with a status of the layer's own, passing the
   * layers nearer the wire on its way out.
   */
  open(call: CallArrival, answer: (status: MiddlewareStatus) => void): CallSteps;
}

/**
 * The layers of one call, nearest the wire first, as one: steps in go first to last, steps out
 * last to first. `answer` ends the call on the wire.
 */
export function stackLayers(
  wire: CallSteps,
  middleware: readonly CallMiddleware[],
  call: CallArrival,
  answer: (status: MiddlewareStatus) => void,
): CallSteps {
  if (middleware.length === 0) return wire;
  const layers: CallSteps[] = [wire];
  for (const each of middleware) {
    const below = layers.length;
    layers.push(
      each.open(call, (status) => outward(layers, below - 1, 'sendStatus', () => answer(status))),
    );
  }
  return {
    arrive: (next) => inward(layers, 0, (layer, on) => layer.arrive(on), next),
    receive: (message, next) => inward(layers, 0, (layer, on) => layer.receive(message, on), next),
    halfClose: (next) => inward(layers, 0, (layer, on) => layer.halfClose(on), next),
    sendMessage: (next) => outward(layers, layers.length - 1, 'sendMessage', next),
    sendStatus: (next) => outward(layers, layers.length - 1, 'sendStatus', next),
    cancelled: () => {
      for (const layer of layers) layer.cancelled();
    },
  };
}

function inward(
  layers: readonly CallSteps[],
  from: number,
  step: (layer: CallSteps, next: () => void) => void,
  last: () => void,
): void {
  if (from === layers.length) last();
  else step(layers[from]!, () => inward(layers, from + 1, step, last));
}

function outward(
  layers: readonly CallSteps[],
  from: number,
  step: 'sendMessage' | 'sendStatus',
  last: () => void,
): void {
  if (from < 0) last();
  else layers[from]![step](() => outward(layers, from - 1, step, last));
}
