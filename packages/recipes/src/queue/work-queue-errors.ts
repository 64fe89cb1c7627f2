// The typed failure of a work queue consumer: its claim on an item is gone.
import { RecipeError } from '../errors.js';

/**
 * The claim an ack or nack was given no longer holds: the consumer's session lease expired or was
 * revoked (the visibility timeout passed), or the claim was already acked or nacked. Nothing was
 * changed. The item may be delivered again (or already was): work queues deliver at least once,
 * so the work must tolerate a repeat. Code `CLAIM_LOST`.
 */
export class ClaimLostError extends RecipeError<'CLAIM_LOST'> {
  /** The item's id. */
  readonly id: string;
  /** The create revision of the claim that was lost. */
  readonly claimRevision: bigint;

  /** `id` and `claimRevision` identify the lost claim. */
  constructor(id: string, claimRevision: bigint) {
    super(
      'CLAIM_LOST',
      `the claim on work item ${id} (revision ${claimRevision}) no longer holds: it expired, or was already acked or nacked`,
    );
    this.id = id;
    this.claimRevision = claimRevision;
  }
}
