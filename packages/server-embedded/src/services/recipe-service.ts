// What the Lock and Election services share: etcd serves them from Go's concurrency recipes over
// an in-process client, so every request a handler makes is checked as the caller's, and every
// error goes out without its gRPC status (status Unknown with etcd's message: see withoutStatus).
import type { MethodDescriptor } from '@etcdkit/client/protocol';
import { bigintOf, bytesOf } from '../api/requests.js';
import { type LocalClient, withoutStatus } from '../concurrency/local-client.js';
import type { QueueRequest } from '../concurrency/queue.js';
import type { ServiceContext } from './context.js';
import type { CallInfo, ResponseOf, ServiceRegistry, StreamSend } from './registry.js';

/** Registers handlers that get the local client acting as the call's user. */
export interface RecipeService {
  unary<Req, Res>(
    method: MethodDescriptor<Req, Res, 'unary'>,
    handler: (request: Req, client: LocalClient) => ResponseOf<Res>,
  ): void;
  /** A unary call that waits (Lock, Campaign); `signal` aborts when the call ends unanswered. */
  waitingUnary<Req, Res>(
    method: MethodDescriptor<Req, Res, 'unary'>,
    handler: (request: Req, client: LocalClient, signal: AbortSignal) => Promise<ResponseOf<Res>>,
  ): void;
  serverStream<Req, Res>(
    method: MethodDescriptor<Req, Res, 'server-stream'>,
    handler: (
      request: Req,
      client: LocalClient,
      send: StreamSend<Res>,
      signal: AbortSignal,
    ) => Promise<void>,
  ): void;
}

/** The registry as etcd's lock and election servers answer, running on `local`. */
export function recipeService(
  registry: ServiceRegistry,
  context: ServiceContext,
  local: LocalClient,
): RecipeService {
  const caller = (call: CallInfo) => local.as(context.authorizer.credentialsOf(call));
  return {
    unary: (method, handler) =>
      registry.unary(method, (request, _size, call) =>
        answered(() => handler(request, caller(call))),
      ),
    waitingUnary: (method, handler) =>
      registry.waitingUnary(method, (request, _size, signal, call) =>
        answered(() => handler(request, caller(call), signal)),
      ),
    serverStream: (method, handler) =>
      registry.serverStream(method, (request, send, call, signal) =>
        answered(() => handler(request, caller(call), send, signal)),
      ),
  };
}

/** The queue a Lock or Campaign request names, waited on until `signal` aborts. */
export function queueRequestOf(
  request: { readonly name?: Uint8Array | null; readonly lease?: bigint | null },
  signal: AbortSignal,
): QueueRequest {
  return { name: bytesOf(request.name), lease: bigintOf(request.lease), signal };
}

/** Runs `answer`, passing an error on as etcd's lock and election servers do. */
async function answered<T>(answer: () => T | Promise<T>): Promise<T> {
  try {
    return await answer();
  } catch (error) {
    throw withoutStatus(error);
  }
}
