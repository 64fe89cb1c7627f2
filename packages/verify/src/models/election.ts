// Elections: at most one leader per epoch, epochs increase, and leader reads see the leader.
import type { Model } from '../checker/model.js';
import type { Operation } from '../history.js';

/** What a campaigner or an observer did. */
export type ElectionInput =
  | { readonly type: 'campaign'; readonly value: string }
  | { readonly type: 'proclaim'; readonly epoch: bigint; readonly value: string }
  | { readonly type: 'resign'; readonly epoch: bigint }
  | { readonly type: 'leader' };

/** The answers: the epoch won, or the leader a read saw (`undefined` for none). */
export type ElectionOutput =
  | { readonly type: 'campaign'; readonly epoch: bigint }
  | { readonly type: 'done' }
  | {
      readonly type: 'leader';
      readonly leader: { readonly epoch: bigint; readonly value: string } | undefined;
    };

/**
 * The election's state: the latest epoch (exact, or only a lower bound after a campaign whose
 * answer was lost), its value, and whether its leader still leads.
 */
export interface ElectionState {
  readonly epoch: bigint;
  readonly exact: boolean;
  readonly value: string | undefined;
  readonly present: boolean;
}

/** An operation of an election history. */
export type ElectionOperation = Operation<ElectionInput, ElectionOutput>;

/**
 * The election model. A campaign wins an epoch greater than every epoch before it (so no epoch
 * has two leaders); a proclaim that succeeded happened while its epoch led; a leader read sees
 * the current leader and value. A leader may vanish at any time (its lease expired), so a read
 * that sees no leader is always allowed; that is the one thing this model cannot check.
 */
export function electionModel(): Model<ElectionState, ElectionInput, ElectionOutput> {
  return {
    name: 'election',
    init: () => ({ epoch: 0n, exact: true, value: undefined, present: false }),
    step: (s, input, output) => {
      // Whether `epoch` may be the current one: equal to it, or above its lower bound.
      const current = (epoch: bigint) =>
        s.present && (s.exact ? s.epoch === epoch : epoch > s.epoch);
      switch (input.type) {
        case 'campaign':
          // Unknown: it may have won an epoch we never learned; reads may tell which.
          if (output?.type !== 'campaign')
            return { epoch: s.epoch, exact: false, value: input.value, present: true };
          return output.epoch > s.epoch
            ? { epoch: output.epoch, exact: true, value: input.value, present: true }
            : undefined;
        case 'proclaim':
          if (!current(input.epoch)) return output === undefined ? s : undefined;
          return { epoch: input.epoch, exact: true, value: input.value, present: true };
        case 'resign':
          return current(input.epoch)
            ? { ...s, epoch: input.epoch, exact: true, present: false }
            : s;
        case 'leader': {
          if (output?.type !== 'leader') return s;
          if (output.leader === undefined) return s.present ? { ...s, present: false } : s;
          const { epoch, value } = output.leader;
          return current(epoch) && s.value === value
            ? { epoch, exact: true, value, present: true }
            : undefined;
        }
      }
    },
    hash: (s) => `${s.epoch}:${s.exact}:${s.present}:${s.value ?? ''}`,
    equal: (a, b) =>
      a.epoch === b.epoch && a.exact === b.exact && a.present === b.present && a.value === b.value,
    // Every epoch or value relied on comes from a campaign of the subset.
    selfContained: (ops) => {
      const campaigns = ops.filter((op) => op.input.type === 'campaign');
      const epochs = new Set(
        campaigns.map((op) => (op.output?.type === 'campaign' ? op.output.epoch : undefined)),
      );
      const values = new Set(
        ops.map((op) =>
          op.input.type === 'campaign' || op.input.type === 'proclaim' ? op.input.value : '',
        ),
      );
      const blind = campaigns.some((op) => op.status !== 'ok');
      return ops.every((op) => {
        if (op.status !== 'ok') return true;
        if (op.input.type === 'proclaim') return blind || epochs.has(op.input.epoch);
        if (op.output?.type === 'leader' && op.output.leader !== undefined)
          return values.has(op.output.leader.value);
        return true;
      });
    },
    describe: (op) => {
      const { input, output } = op;
      const request =
        input.type === 'campaign'
          ? `campaign ${JSON.stringify(input.value)}`
          : input.type === 'proclaim'
            ? `proclaim ${JSON.stringify(input.value)} as epoch ${input.epoch}`
            : input.type === 'resign'
              ? `resign epoch ${input.epoch}`
              : 'leader?';
      if (op.status !== 'ok' || output === undefined) return `${request} -> ${op.status}`;
      if (output.type === 'campaign') return `${request} -> won epoch ${output.epoch}`;
      if (output.type === 'leader')
        return `${request} -> ${output.leader === undefined ? 'none' : `${JSON.stringify(output.leader.value)} (epoch ${output.leader.epoch})`}`;
      return `${request} -> done`;
    },
  };
}
