import { request as httpRequestRaw, type IncomingMessage } from 'node:http';
import { request as httpsRequestRaw } from 'node:https';

/** TLS material for requests to an https endpoint; PEM text. */
export interface HttpTls {
  /** CA to trust; when absent the server certificate is not verified (readiness probes only). */
  readonly ca?: string;
  readonly cert?: string;
  readonly key?: string;
}

export interface HttpRequestOptions {
  readonly method?: 'GET' | 'POST';
  /** JSON text sent as the body. */
  readonly body?: string;
  /** Whole-request deadline, in ms. */
  readonly timeoutMs?: number;
  readonly tls?: HttpTls;
}

export interface HttpResponse {
  readonly status: number;
  readonly body: string;
}

/**
 * One HTTP(S) request on a fresh connection (no keep-alive pool: a pooled socket would outlive
 * a stopped or paused server and make the next probe lie).
 */
export function httpRequest(url: string, options: HttpRequestOptions = {}): Promise<HttpResponse> {
  const target = new URL(url);
  const secure = target.protocol === 'https:';
  const timeoutMs = options.timeoutMs ?? 5_000;
  return new Promise((resolve, reject) => {
    const onResponse = (response: IncomingMessage) => {
      const chunks: Buffer[] = [];
      response.on('data', (chunk: Buffer) => chunks.push(chunk));
      response.on('error', reject);
      response.on('end', () => {
        clearTimeout(timer);
        resolve({
          status: response.statusCode ?? 0,
          body: Buffer.concat(chunks).toString('utf8'),
        });
      });
    };
    const headers: Record<string, string> = {};
    if (options.body !== undefined) {
      headers['content-type'] = 'application/json';
      headers['content-length'] = String(Buffer.byteLength(options.body));
    }
    const common = { method: options.method ?? 'GET', headers, agent: false as const };
    const req = secure
      ? httpsRequestRaw(
          target,
          {
            ...common,
            ca: options.tls?.ca,
            cert: options.tls?.cert,
            key: options.tls?.key,
            rejectUnauthorized: options.tls?.ca !== undefined,
          },
          onResponse,
        )
      : httpRequestRaw(target, common, onResponse);
    const timer = setTimeout(() => {
      req.destroy(new Error(`${options.method ?? 'GET'} ${url} timed out after ${timeoutMs} ms`));
    }, timeoutMs);
    req.on('error', (error) => {
      clearTimeout(timer);
      reject(error);
    });
    req.end(options.body);
  });
}

/** Resolves after `ms`. */
export function delay(ms: number): Promise<void> {
  return new Promise((resolve) => setTimeout(resolve, ms));
}
