// The recipes' source layers (docs/architecture.md): a module imports only from layers below its
// own, and no import cycle exists, type-only imports included.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeLayers } from '@etcdkit/testkit/describe-layers';
import type { LayerList } from '@etcdkit/testkit/layers';

const SRC = join(dirname(fileURLToPath(import.meta.url)), '..', 'src');

/**
 * Top to bottom. A unit is a folder of src/ or a file directly in it; '.' stands for the files
 * directly in src/ not named here (errors, recipe-name, wait), which may import each other.
 */
const LAYERS: LayerList = [
  ['index.ts', 'internal.ts'],
  // Service discovery registers through a resilient session.
  ['discovery'],
  // A Leadership is a Hold (lock/hold.ts).
  ['election'],
  ['lock', 'barrier', 'queue', 'counter'],
  // A key's place in a line ordered by create revision: taken, waited for, held, released.
  ['line'],
  ['session'],
  // The STM, and its backoff the resilient session and the registry reuse.
  ['stm'],
  ['.'],
];

describeLayers('recipes source layers', {
  src: SRC,
  layers: LAYERS,
  mostFilesAtTop: 6,
  refused: {
    edges: [
      { from: 'line/place.ts', to: 'lock/hold.ts' },
      { from: 'lock/mutex.ts', to: 'queue/queue.ts' },
      { from: 'wait.ts', to: 'session/session.ts' },
      { from: 'line/turn.ts', to: 'line/place.ts' },
      { from: 'line/place.ts', to: 'line/turn.ts' },
    ],
    upward: [
      'line/place.ts -> lock/hold.ts',
      'lock/mutex.ts -> queue/queue.ts',
      'wait.ts -> session/session.ts',
    ],
    cycles: ['line/place.ts -> line/turn.ts -> line/place.ts'],
  },
});
