// The source folders' layers (docs/embedded-server.md, "Inside"): a module imports only from
// layers below its own, and no import cycle exists, type-only imports included.
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describeLayers } from '@etcdkit/testkit/describe-layers';
import type { LayerList } from '@etcdkit/testkit/layers';

const SRC = join(dirname(fileURLToPath(import.meta.url)), '..', 'src');

/**
 * Top to bottom. A unit is a folder of src/, or a file directly in it; '.' stands for the files
 * directly in src/ not named here (bytes, clock, errors, logger...), which may import each other.
 */
const LAYERS: LayerList = [
  ['index.ts'],
  ['cli'],
  ['cluster'],
  ['embedded-etcd.ts'],
  ['member'],
  ['net'],
  ['faults'],
  ['services'],
  ['concurrency'],
  ['persistence'],
  ['watch', 'maintenance'],
  ['lease'],
  ['kv'],
  ['auth'],
  ['consensus'],
  ['api'],
  ['mvcc'],
  ['.'],
];

describeLayers('server-embedded source layers', {
  src: SRC,
  layers: LAYERS,
  refused: {
    edges: [
      { from: 'mvcc/store.ts', to: 'kv/txn.ts' },
      { from: 'watch/wire.ts', to: 'maintenance/quota.ts' },
      { from: 'kv/txn.ts', to: 'mvcc/store.ts' },
      { from: 'clock.ts', to: 'errors.ts' },
    ],
    upward: ['mvcc/store.ts -> kv/txn.ts', 'watch/wire.ts -> maintenance/quota.ts'],
    cycles: ['kv/txn.ts -> mvcc/store.ts -> kv/txn.ts'],
  },
});
