// What the recipes import of a key's life in a line, from the modules that hold it: taking a place
// (entry.ts, session-key.ts, unique-key.ts), acquiring (acquire.ts) and holding (holding.ts).
// Kept so the importers of this path go on working; new code imports the modules themselves.
export { acquireHold, type HoldAcquisition, type HoldWait, waitToHold } from './acquire.js';
export { deleteIfCreatedAt, type LineEntry, sessionEnded } from './entry.js';
export { Holding } from './holding.js';
export {
  acquireSessionKey,
  type SessionEntry,
  sessionKey,
  useSessionKey,
} from './session-key.js';
export { createUniqueKey } from './unique-key.js';
