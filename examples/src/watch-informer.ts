// A live cache of a prefix: the informer.
//
//   npm run example -- watch-informer [--endpoints http://127.0.0.1:2379]
//
// A service registry lives under `registry/`. The informer lists the prefix at one revision, then
// watches from exactly that revision, so its cache is always the prefix as it was at
// `informer.revision`: nothing missed, nothing applied twice, resumed after reconnects. Here
// instances register (with a lease, so a crashed instance disappears by itself), update and
// deregister while the cache follows; at the end the cache is compared with a fresh read.
import { informer } from '@etcdkit/client';
import { commandLine, connect, ENDPOINTS_FLAG, sleep } from './support.js';

const { etcd, close } = await connect(commandLine('watch-informer', ENDPOINTS_FLAG).endpoints);
const registry = etcd.namespace('registry/');
try {
  await registry.put('api-1', JSON.stringify({ address: '10.0.0.1:8080' }));

  const cache = informer(registry, {
    all: true,
    onAdd: (kv) => console.log(`cache: + ${kv.keyText()} ${kv.text()}`),
    onUpdate: (kv) => console.log(`cache: ~ ${kv.keyText()} ${kv.text()}`),
    onDelete: (previous) => console.log(`cache: - ${previous.keyText()}`),
  });
  const synced = await cache.synced;
  console.log(`cache synced at revision ${synced} with ${cache.size} instance(s)`);

  // Instances come and go; an instance's key is attached to its lease.
  const lease = await etcd.lease.grant(10);
  await registry.put('api-2', JSON.stringify({ address: '10.0.0.2:8080' }), { lease });
  await registry.put('worker-1', JSON.stringify({ address: '10.0.0.3:9000' }));
  await registry.put('api-1', JSON.stringify({ address: '10.0.0.1:8081' }));
  await registry.delete('worker-1');
  await lease.revoke(); // api-2 "crashes": its lease goes, and its key with it

  // Wait until the cache has caught up with the last write.
  const { header } = await registry.range({ all: true });
  while (cache.revision < header.revision) await sleep(5);

  const cached = cache.values().map((kv) => `${kv.keyText()}=${kv.text()}`);
  const fresh = (await registry.range({ all: true })).kvs.map(
    (kv) => `${kv.keyText()}=${kv.text()}`,
  );
  console.log(`cache at revision ${cache.revision}: ${cached.join(', ')}`);
  await cache.close();
  if (JSON.stringify(cached.sort()) !== JSON.stringify(fresh.sort())) {
    console.log(`MISMATCH: a fresh read gives ${fresh.join(', ')}`);
    process.exitCode = 1;
  } else {
    console.log('watch-informer OK: the cache matches a fresh read');
  }
  await registry.delete({ all: true });
} finally {
  await close();
}
