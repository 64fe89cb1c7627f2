// The HTTP endpoints of etcd's client port, answered as etcd answers them: /version, /health,
// /livez and /readyz (3.5.11+), /metrics; 404 for any other path, 405 for a method an endpoint
// does not take, a redirect to the clean path (Go's ServeMux), CORS headers on every answer and
// 200 to any OPTIONS (etcd's default --cors '*'). Not served: etcd's gRPC gateway (/v3/...),
// /debug/vars and 3.4's /config/local/log; they get the 404 of an unknown path.
import { errorAnswer, type HttpAnswer } from './answer.js';
import { HealthCounts, hasProbeEndpoints, healthAnswer, probeAnswer } from './health.js';
import type { MemberView } from './member-view.js';
import { metricsAnswer } from './metrics.js';
import type { RequestHead } from './request-head.js';

/** What etcd's CORS handler adds to every answer. */
const CORS_HEADERS: readonly (readonly [string, string])[] = [
  ['Access-Control-Allow-Headers', 'accept, content-type, authorization'],
  ['Access-Control-Allow-Methods', 'POST, GET, OPTIONS, PUT, DELETE'],
  ['Access-Control-Allow-Origin', '*'],
];

/** The request as the endpoints need it (HTTP/1.x or HTTP/2 alike). */
export type EndpointRequest = Pick<RequestHead, 'method' | 'path' | 'query'>;

/** etcd's HTTP endpoints over one member. */
export class EtcdEndpoints {
  readonly #view: MemberView;
  readonly #health = new HealthCounts();

  constructor(view: MemberView) {
    this.#view = view;
  }

  /** Answers `request`. */
  answer(request: EndpointRequest): HttpAnswer {
    const answer = this.#route(request);
    return { ...answer, headers: [...CORS_HEADERS, ...answer.headers] };
  }

  #route({ method, path, query }: EndpointRequest): HttpAnswer {
    if (method === 'OPTIONS') return { status: 200, headers: [], body: '' };
    const decoded = decodePath(path);
    const clean = cleanPath(decoded);
    if (clean !== decoded) return redirect(method, clean, query);
    const view = this.#view;
    switch (clean) {
      case '/version':
        return method === 'GET' ? versionAnswer(view) : notAllowed('GET');
      case '/health':
        return method === 'GET' ? healthAnswer(view, query, this.#health) : notAllowed('GET');
      case '/metrics':
        return metricsAnswer(view, this.#health);
    }
    const probe = /^\/(livez|readyz)(?:\/([^/]+))?$/.exec(clean);
    if (probe !== null && hasProbeEndpoints(view)) {
      const endpoint = probe[1] as 'livez' | 'readyz';
      const answer = probeAnswer(view, endpoint, probe[2], query);
      if (answer !== undefined) return method === 'GET' ? answer : notAllowed('GET');
    }
    return errorAnswer(404, '404 page not found');
  }
}

function versionAnswer(view: MemberView): HttpAnswer {
  const cluster = `${view.etcdVersion}.0`;
  const versions: Record<string, string> = { etcdserver: view.serverVersion, etcdcluster: cluster };
  // 3.6 adds the storage version, which follows the cluster's.
  if (view.etcdVersion === '3.6' || view.etcdVersion === '3.7') versions.storage = cluster;
  return {
    status: 200,
    headers: [['Content-Type', 'application/json']],
    body: JSON.stringify(versions),
  };
}

function notAllowed(allowed: string): HttpAnswer {
  return errorAnswer(405, 'Method Not Allowed', [['Allow', allowed]]);
}

/** Go's redirect to the clean path: a small HTML body for GET and HEAD only. */
function redirect(method: string, path: string, query: string): HttpAnswer {
  const location = query === '' ? path : `${path}?${query}`;
  const headers: [string, string][] = [['Location', location]];
  if (method !== 'GET' && method !== 'HEAD') return { status: 301, headers, body: '' };
  headers.push(['Content-Type', 'text/html; charset=utf-8']);
  return {
    status: 301,
    headers,
    body: `<a href="${escapeHtml(location)}">Moved Permanently</a>.\n\n`,
  };
}

function escapeHtml(text: string): string {
  return text
    .replaceAll('&', '&amp;')
    .replaceAll('<', '&lt;')
    .replaceAll('>', '&gt;')
    .replaceAll('"', '&#34;')
    .replaceAll("'", '&#39;');
}

/** The path percent-decoded, as Go matches it; left as sent when it does not decode. */
function decodePath(path: string): string {
  try {
    return decodeURIComponent(path);
  } catch {
    return path;
  }
}

/** The path without '.', '..' and empty segments, keeping a trailing slash (Go's cleanPath). */
export function cleanPath(path: string): string {
  const rooted = path.startsWith('/') ? path : `/${path}`;
  const segments: string[] = [];
  for (const segment of rooted.split('/')) {
    if (segment === '' || segment === '.') continue;
    if (segment === '..') segments.pop();
    else segments.push(segment);
  }
  const clean = `/${segments.join('/')}`;
  return rooted.endsWith('/') && clean !== '/' ? `${clean}/` : clean;
}
