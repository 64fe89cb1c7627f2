// An HTTP answer and its bytes on an HTTP/1.x connection, laid out as Go's net/http server writes
// them (etcd's HTTP side is Go's): the handler's header fields sorted by name, then Date,
// Content-Length, a detected Content-Type and Connection. Clients do not care about the order;
// side-by-side tests against etcd read easier when it is the same.

/** A response to one request. */
export interface HttpAnswer {
  readonly status: number;
  /** The fields the handler set (Go's header map), written sorted by name. */
  readonly headers: readonly (readonly [string, string])[];
  /** The content type Go detects from the body when the handler set none (written after Date). */
  readonly detectedType?: string;
  readonly body: string;
}

const STATUS_TEXT: Readonly<Record<number, string>> = {
  200: 'OK',
  301: 'Moved Permanently',
  400: 'Bad Request',
  404: 'Not Found',
  405: 'Method Not Allowed',
  431: 'Request Header Fields Too Large',
  503: 'Service Unavailable',
};

/** The reason phrase of `status`. */
export function statusText(status: number): string {
  return STATUS_TEXT[status] ?? 'Unknown';
}

/** Go's http.Error: a plain text body ending in a newline, never sniffed by the browser. */
export function errorAnswer(
  status: number,
  message: string,
  headers: readonly (readonly [string, string])[] = [],
): HttpAnswer {
  return {
    status,
    headers: [
      ...headers,
      ['Content-Type', 'text/plain; charset=utf-8'],
      ['X-Content-Type-Options', 'nosniff'],
    ],
    body: `${message}\n`,
  };
}

/** How an answer goes out. */
export interface AnswerFraming {
  /** The request's protocol version ('1.0' or '1.1'): the status line repeats it. */
  readonly version: string;
  /** The connection closes after this answer (the answer says so on HTTP/1.1). */
  readonly close: boolean;
  /** HEAD: the head only, with the Content-Length the body would have had. */
  readonly headOnly: boolean;
  readonly now: Date;
}

/** The bytes of `answer` on an HTTP/1.x connection. */
export function encodeAnswer(answer: HttpAnswer, framing: AnswerFraming): Buffer {
  const lines = [`HTTP/${framing.version} ${answer.status} ${statusText(answer.status)}`];
  const sorted = [...answer.headers].sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
  for (const [name, value] of sorted) lines.push(`${name}: ${value}`);
  const body = Buffer.from(answer.body, 'utf8');
  lines.push(`Date: ${framing.now.toUTCString()}`);
  lines.push(`Content-Length: ${body.length}`);
  if (answer.detectedType !== undefined) lines.push(`Content-Type: ${answer.detectedType}`);
  // HTTP/1.0 closes by default, so only HTTP/1.1 needs telling.
  if (framing.close && framing.version === '1.1') lines.push('Connection: close');
  const head = Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');
  return framing.headOnly ? head : Buffer.concat([head, body]);
}
