// The child process of the transport benchmark (transport.ts): an in-memory EmbeddedEtcd, plus a
// writer client that makes watch events on request, so neither the server's nor the writer's CPU
// is counted in the parent, which measures only the client under test. A message with `keys` spreads
// its puts round-robin over `<key>0` .. `<key><keys - 1>` (the fan-in rows of transport-cpu.ts).
import { Etcd } from '../packages/client/src/etcd.js';
import { EmbeddedEtcd } from '../packages/server-embedded/src/index.js';

const server = await EmbeddedEtcd.start();
const writer = new Etcd({ endpoints: [...server.endpoints] });

process.on('message', (message: { id: number; key: string; count: number; keys?: number }) => {
  void (async () => {
    const { key, count, keys } = message;
    for (let i = 0; i < count; i++) {
      await writer.put(keys === undefined ? key : `${key}${i % keys}`, String(i));
    }
    process.send?.({ id: message.id });
  })();
});
process.on('SIGTERM', () => {
  void writer
    .close()
    .then(() => server.stop())
    .finally(() => process.exit(0));
});
process.on('disconnect', () => process.exit(0));
process.send?.({ endpoints: [...server.endpoints] });
