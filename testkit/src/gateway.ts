import { type HttpTls, httpRequest } from './internal/http.js';

/** One member's view of the cluster, from `/v3/maintenance/status`. Ids are decimal uint64. */
export interface MemberStatus {
  readonly memberId: string;
  /** Id of the leader this member knows; `'0'` when it knows none. */
  readonly leader: string;
  readonly version: string;
  readonly raftTerm: string;
}

/**
 * A few etcd calls over the v3 JSON gateway (`/v3/kv/put`, `/v3/kv/range`, ...), which etcd
 * serves on its client port since 3.4. It lets the testkit and its tests read and write without
 * depending on the client under test. Keys and values are UTF-8 text.
 */
export class EtcdHttpGateway {
  readonly #tls: HttpTls | undefined;
  readonly #timeoutMs: number;

  constructor(
    readonly endpoint: string,
    tls?: HttpTls,
    timeoutMs = 5_000,
  ) {
    this.#tls = tls;
    this.#timeoutMs = timeoutMs;
  }

  /** Writes `key`; resolves to the revision of the write. */
  async put(key: string, value: string): Promise<bigint> {
    const response = await this.#call('/v3/kv/put', { key: base64(key), value: base64(value) });
    return BigInt(stringField(objectField(response, 'header'), 'revision') ?? '0');
  }

  /** The value of `key`, or undefined when absent. */
  async get(key: string): Promise<string | undefined> {
    const response = await this.#call('/v3/kv/range', { key: base64(key) });
    const kvs = Reflect.get(response, 'kvs');
    if (!Array.isArray(kvs) || kvs.length === 0) return undefined;
    const first: unknown = kvs[0];
    if (typeof first !== 'object' || first === null) return undefined;
    // The gateway omits empty fields: a key with an empty value has no `value`.
    return Buffer.from(stringField(first, 'value') ?? '', 'base64').toString('utf8');
  }

  /** This member's id, its leader and version. */
  async status(): Promise<MemberStatus> {
    const response = await this.#call('/v3/maintenance/status', {});
    const header = objectField(response, 'header');
    return {
      memberId: stringField(header, 'member_id') ?? stringField(header, 'memberId') ?? '0',
      leader: stringField(response, 'leader') ?? '0',
      version: stringField(response, 'version') ?? '',
      raftTerm: stringField(response, 'raftTerm') ?? stringField(response, 'raft_term') ?? '0',
    };
  }

  /** Server version from `GET /version`, e.g. `3.4.23`. */
  async version(): Promise<string> {
    const response = await httpRequest(`${this.endpoint}/version`, {
      timeoutMs: this.#timeoutMs,
      tls: this.#tls,
    });
    if (response.status !== 200) throw new Error(`GET /version: HTTP ${response.status}`);
    return stringField(parseObject(response.body), 'etcdserver') ?? '';
  }

  /** POSTs `body` (JSON) to any gateway path, e.g. `/v3/kv/txn`; resolves to the JSON answer. */
  post(path: string, body: object): Promise<object> {
    return this.#call(path, body);
  }

  async #call(path: string, body: object): Promise<object> {
    const response = await httpRequest(`${this.endpoint}${path}`, {
      method: 'POST',
      body: JSON.stringify(body),
      timeoutMs: this.#timeoutMs,
      tls: this.#tls,
    });
    if (response.status !== 200) {
      throw new Error(`POST ${path}: HTTP ${response.status} ${response.body.trim()}`);
    }
    return parseObject(response.body);
  }
}

function base64(text: string): string {
  return Buffer.from(text, 'utf8').toString('base64');
}

function parseObject(text: string): object {
  const value: unknown = JSON.parse(text);
  if (typeof value !== 'object' || value === null)
    throw new Error(`expected a JSON object: ${text}`);
  return value;
}

function objectField(value: object, name: string): object {
  const field: unknown = Reflect.get(value, name);
  return typeof field === 'object' && field !== null ? field : {};
}

function stringField(value: object, name: string): string | undefined {
  const field: unknown = Reflect.get(value, name);
  return typeof field === 'string' ? field : undefined;
}
