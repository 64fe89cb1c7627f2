// etcd's HTTP endpoints on an HTTP/2 stream: over TLS, where ALPN picks h2 for a browser or curl,
// etcd answers a request that is not gRPC with the same handlers as on HTTP/1.1.
import type { HeaderField } from '@etcdkit/client/h2';
import { encodeResponseBlock } from '../h2/response-headers.js';
import type { H2Stream } from '../h2/stream.js';
import type { HttpAnswer } from './answer.js';
import type { EndpointRequest } from './etcd-endpoints.js';

/** The request an HTTP/2 header list asks for. */
export function h2Request(fields: readonly HeaderField[]): EndpointRequest {
  let method = 'GET';
  let target = '/';
  for (const { name, value } of fields) {
    if (name === ':method') method = value;
    else if (name === ':path') target = value;
  }
  const mark = target.indexOf('?');
  return {
    method,
    path: mark < 0 ? target : target.slice(0, mark),
    query: mark < 0 ? '' : target.slice(mark + 1),
  };
}

/** Sends `answer` on `stream` and ends it (a HEAD gets the head only). */
export function sendH2Answer(stream: H2Stream, answer: HttpAnswer, method: string): void {
  const body = Buffer.from(answer.body, 'utf8');
  const fields: [string, string][] = answer.headers.map(([name, value]) => [
    name.toLowerCase(),
    value,
  ]);
  if (answer.detectedType !== undefined) fields.push(['content-type', answer.detectedType]);
  fields.push(['date', new Date().toUTCString()], ['content-length', String(body.length)]);
  const block = encodeResponseBlock(answer.status, fields);
  if (method === 'HEAD' || body.length === 0) {
    stream.respond(block, true);
    return;
  }
  stream.respond(block, false);
  stream.write(body);
  // An empty trailer block ends the stream after the body.
  stream.end(encodeResponseBlock(undefined, []));
}
