// The head of an HTTP/1.x request: the request line and the few header fields the server acts on.
// Anything that is not an HTTP/1.0 or 1.1 request line is not answered at all: etcd's listener
// only hands connections that look like HTTP/1 to its HTTP server and closes the others.

/** A parsed request head. */
export interface RequestHead {
  readonly method: string;
  /** The request target's path, percent-encoded as sent ('/health'); absolute-form reduced to it. */
  readonly path: string;
  /** The query string without '?' ('' when none). */
  readonly query: string;
  /** '1.0' or '1.1'. */
  readonly version: string;
  /** The connection closes after the answer (Connection: close, or HTTP/1.0). */
  readonly close: boolean;
  /** Octets of body that follow the head (Content-Length), 0 when none. */
  readonly bodyBytes: number;
  /** The body is chunked: its length is unknown, so the connection ends after the answer. */
  readonly chunked: boolean;
}

/** Why a head cannot be served; `answer` false: close without a word. */
export interface HeadFault {
  readonly fault: string;
  readonly answer: boolean;
}

const REQUEST_LINE = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+) (\S+) HTTP\/1\.([01])$/;
const FIELD = /^([!#$%&'*+.^_`|~0-9A-Za-z-]+):[ \t]*(.*?)[ \t]*$/;
const ABSOLUTE_FORM = /^[A-Za-z][A-Za-z0-9+.-]*:\/\/[^/?#]*/;

/** Where the head in `bytes` ends (after its blank line), or -1 while it is incomplete. */
export function headEnd(bytes: Buffer): number {
  const crlf = bytes.indexOf('\r\n\r\n');
  const lf = bytes.indexOf('\n\n');
  if (crlf < 0) return lf < 0 ? -1 : lf + 2;
  return lf >= 0 && lf < crlf ? lf + 2 : crlf + 4;
}

/** Parses a complete head (without its final blank line). */
export function parseHead(text: string): RequestHead | HeadFault {
  // Empty lines before the request line are tolerated (RFC 9112 section 2.2).
  const lines = text.replace(/^(\r?\n)+/, '').split(/\r?\n/);
  const line = REQUEST_LINE.exec(lines[0] ?? '');
  if (line === null) return { fault: 'not an HTTP/1.x request', answer: false };
  const method = line[1]!;
  const target = line[2]!;
  const version = `1.${line[3]!}`;
  let host = false;
  let close = version === '1.0';
  let bodyBytes = 0;
  let chunked = false;
  for (const raw of lines.slice(1)) {
    if (raw === '') continue;
    const field = FIELD.exec(raw);
    if (field === null) return { fault: 'malformed MIME header line', answer: true };
    const name = field[1]!.toLowerCase();
    const value = field[2]!;
    if (name === 'host') host = true;
    else if (name === 'connection') {
      const tokens = value
        .toLowerCase()
        .split(',')
        .map((token) => token.trim());
      if (tokens.includes('close')) close = true;
    } else if (name === 'content-length') {
      if (!/^\d{1,15}$/.test(value)) return { fault: 'bad Content-Length', answer: true };
      bodyBytes = Number(value);
    } else if (name === 'transfer-encoding') chunked = true;
  }
  if (version === '1.1' && !host) return { fault: 'missing required Host header', answer: true };
  const local = target.replace(ABSOLUTE_FORM, '') || '/';
  const mark = local.indexOf('?');
  return {
    method,
    path: mark < 0 ? local : local.slice(0, mark),
    query: mark < 0 ? '' : local.slice(mark + 1),
    version,
    close,
    bodyBytes,
    chunked,
  };
}

/** Whether `parsed` is a fault rather than a head. */
export function isFault(parsed: RequestHead | HeadFault): parsed is HeadFault {
  return 'fault' in parsed;
}
