// The answer of calls whose only result is that they were applied (revoke, membership and auth
// changes, leader transfer): just the response header, in an object so fields can be added later.
import type { etcdserverpb } from './generated/protocol.js';
import { type ResponseHeader, toResponseHeader } from './header.js';

/** A call was applied; `header` says by which member and at which revision. */
export interface Acknowledged {
  readonly header: ResponseHeader;
}

/** Shapes a response that carries nothing but a header. */
export function acknowledged(response: {
  readonly header?: etcdserverpb.ResponseHeader.$Properties | null;
}): Acknowledged {
  return { header: toResponseHeader(response.header) };
}
