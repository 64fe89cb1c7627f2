// The client's source layers (docs/architecture.md): a module imports only from layers below its
// own, and no import cycle exists, type-only imports included.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeLayers } from '@etcdkit/testkit/describe-layers';
import type { LayerList } from '@etcdkit/testkit/layers';

const SRC = join(dirname(fileURLToPath(import.meta.url)), '..', 'src');

/**
 * Top to bottom. A unit is a folder of src/, a file directly in it, or a file named with its
 * folder (a folder's contract, below the rest of it); '.' stands for the files directly in src/
 * not named here (bytes, errors, header...), which may import each other.
 */
const LAYERS: LayerList = [
  ['index.ts', 'protocol.ts', 'internal'],
  ['etcd.ts'],
  ['kv', 'lease', 'election', 'cluster'],
  ['watch'],
  ['keys'],
  ['connection'],
  ['transport'],
  ['.'],
  // What errors.ts builds on: the transports' statuses and failures.
  ['transport/types.ts'],
  ['generated'],
];

describeLayers('client source layers', {
  src: SRC,
  layers: LAYERS,
  mostFilesAtTop: 10,
  refused: {
    edges: [
      { from: 'connection/retry.ts', to: 'watch/hub.ts' },
      { from: 'watch/hub.ts', to: 'kv/kv.ts' },
      { from: 'lease/lease.ts', to: 'election/lock.ts' },
      { from: 'transport/types.ts', to: 'errors.ts' },
      { from: 'kv/kv.ts', to: 'watch/hub.ts' },
      { from: 'watch/hub.ts', to: 'connection/retry.ts' },
      { from: 'bytes.ts', to: 'errors.ts' },
    ],
    upward: [
      'connection/retry.ts -> watch/hub.ts',
      'watch/hub.ts -> kv/kv.ts',
      'lease/lease.ts -> election/lock.ts',
      'transport/types.ts -> errors.ts',
    ],
    cycles: [
      'watch/hub.ts -> kv/kv.ts -> watch/hub.ts',
      'connection/retry.ts -> watch/hub.ts -> connection/retry.ts',
    ],
  },
});
