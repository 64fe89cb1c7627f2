// The KV requests as a single etcd member handles them: stateless validation first (what etcd's
// gRPC layer checks), then a proposal for requests that write (size limit, raft index), then the
// apply, which turns one request into at most one new revision. Responses carry a header with the
// revision only; the service layer adds the cluster fields. With auth, the caller is identified
// after the validation and before the proposal, and its permissions are checked when the request is
// applied, after the alarms, as in etcd; a request that comes with no credentials at all is the
// server's own and is not checked.

import type {
  CompactionRequest,
  CompactionResponse,
  DeleteRangeRequest,
  DeleteRangeResponse,
  PutRequest,
  PutResponse,
  RangeRequest,
  RangeResponse,
  TxnRequest,
  TxnResponse,
} from '../api/requests.js';
import { numberOf, revisionHeader } from '../api/requests.js';
import type { Authorizer } from '../auth/authorizer.js';
import type { Caller } from '../auth/caller.js';
import type { CallCredentials } from '../auth/types.js';
import { ProposalKind, type ProposalLog } from '../consensus/proposals.js';
import type { WriteGuard } from '../consensus/write-guard.js';
import { EtcdServerError } from '../errors.js';
import type { Lessor } from '../mvcc/lessor.js';
import type { MvccStore } from '../mvcc/store.js';
import { applyDeleteRange } from './delete.js';
import { checkIntervals } from './intervals.js';
import { forgetEmptyRangeEnd, forgetEmptyRangeEndsInTxn } from './proposed-request.js';
import { applyPut, checkPut } from './put.js';
import { executeRange, hasRevisionFilters, isDefaultOrdering } from './range.js';
import { checkTxn, executeTxn, isReadOnlyTxn, planTxn } from './txn.js';
import {
  checkDeleteRequest,
  checkPutRequest,
  checkRangeRequest,
  checkTxnRequest,
} from './validation.js';

/** What the applier works on. */
export interface KvApplierOptions {
  readonly store: MvccStore;
  readonly lessor: Lessor;
  readonly proposals: ProposalLog;
  /** Most ops in one list of a txn (--max-txn-ops). */
  readonly maxTxnOps: number;
  /** The backend quota and the alarms; none: nothing is refused. */
  readonly guard?: WriteGuard;
  /** Users and permissions; none: every request is allowed. */
  readonly authorizer?: Authorizer;
}

/** Handles Range, Put, DeleteRange, Txn and Compact requests. */
export class KvApplier {
  readonly store: MvccStore;
  readonly #lessor: Lessor;
  readonly #proposals: ProposalLog;
  readonly #maxTxnOps: number;
  readonly #guard: WriteGuard | undefined;
  readonly #authorizer: Authorizer | undefined;

  constructor(options: KvApplierOptions) {
    this.store = options.store;
    this.#lessor = options.lessor;
    this.#proposals = options.proposals;
    this.#maxTxnOps = options.maxTxnOps;
    this.#guard = options.guard;
    this.#authorizer = options.authorizer;
  }

  /** `credentials`: what the call presented (see the file comment). */
  range(r: RangeRequest, credentials?: CallCredentials): RangeResponse {
    checkRangeRequest(r);
    this.#identify(credentials)?.checkRangeRequest(r);
    return executeRange(this.store, r);
  }

  /** Checks a RangeStream request before its first chunk (see range-stream.ts). */
  checkRangeStream(r: RangeRequest, credentials?: CallCredentials): void {
    checkRangeRequest(r);
    if (!isDefaultOrdering(r)) throw new EtcdServerError('RANGE_STREAM_SORT');
    if (hasRevisionFilters(r)) throw new EtcdServerError('RANGE_STREAM_FILTER');
    this.#identify(credentials)?.checkRangeRequest(r);
  }

  /** `requestBytes` is the size of the request's encoding, for the proposal size limit. */
  put(r: PutRequest, requestBytes: number, credentials?: CallCredentials): PutResponse {
    // etcd's quota layer wraps the KV server, so the quota is checked before the request is.
    this.#guard?.beforeProposal({ kind: 'put', request: r });
    checkPutRequest(r);
    const caller = this.#identify(credentials);
    this.#proposals.propose(ProposalKind.put, requestBytes, caller?.info);
    this.#guard?.atApply({ kind: 'put', request: r });
    caller?.checkPut(r);
    checkPut(this.store, this.#lessor, r);
    const write = this.store.write();
    try {
      return applyPut(write, r);
    } finally {
      write.end();
    }
  }

  deleteRange(
    r: DeleteRangeRequest,
    requestBytes: number,
    credentials?: CallCredentials,
  ): DeleteRangeResponse {
    checkDeleteRequest(r);
    const caller = this.#identify(credentials);
    this.#proposals.propose(ProposalKind.deleteRange, requestBytes, caller?.info);
    this.#guard?.atApply({ kind: 'deleteRange' });
    forgetEmptyRangeEnd(r);
    caller?.checkDeleteRange(r);
    const write = this.store.write();
    try {
      return applyDeleteRange(write, r);
    } finally {
      write.end();
    }
  }

  txn(r: TxnRequest, requestBytes: number, credentials?: CallCredentials): TxnResponse {
    this.#guard?.beforeProposal({ kind: 'txn', request: r });
    checkTxnRequest(r, this.#maxTxnOps);
    // After the per-op checks, so that a huge txn fails cheaply on them first (as in etcd).
    checkIntervals(r.success ?? []);
    checkIntervals(r.failure ?? []);
    const readOnly = isReadOnlyTxn(r);
    const caller = this.#identify(credentials);
    // A txn that cannot write is served like a read: no proposal, no size limit, no log entry.
    if (!readOnly) {
      this.#proposals.propose(ProposalKind.txn, requestBytes, caller?.info);
      this.#guard?.atApply({ kind: 'txn', request: r });
      forgetEmptyRangeEndsInTxn(r);
    }
    caller?.checkTxn(r);
    const plan = planTxn(this.store, r);
    checkTxn(this.store, this.#lessor, r, plan);
    if (readOnly) return executeTxn(this.store, r, plan);
    const write = this.store.write();
    try {
      return executeTxn(write, r, plan);
    } finally {
      write.end();
    }
  }

  /**
   * Compaction takes effect logically at once, so `physical` needs no waiting here. With auth on,
   * only admins may compact (checked first, as etcd's gRPC layer does).
   */
  compact(
    r: CompactionRequest,
    requestBytes: number,
    credentials?: CallCredentials,
  ): CompactionResponse {
    const caller = this.#identify(credentials);
    caller?.checkCompact();
    this.#proposals.propose(ProposalKind.compaction, requestBytes, caller?.info);
    this.#guard?.atApply({ kind: 'compaction' });
    this.store.compact(numberOf(r.revision));
    return { header: revisionHeader(this.store.revision) };
  }

  /** The caller presenting `credentials`; none for the server's own requests or without auth. */
  #identify(credentials: CallCredentials | undefined): Caller | undefined {
    return credentials === undefined ? undefined : this.#authorizer?.identify(credentials);
  }
}
