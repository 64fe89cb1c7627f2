// The child process of the recipes suite's "leader process dies" row: campaigns on a session with
// a short TTL, tells the parent it leads, and waits to be killed (SIGKILL: no resign, no revoke).
import { Etcd } from '../packages/client/src/index.js';
import { Election, Session } from '../packages/recipes/src/index.js';

const [endpoint, prefix, ttl] = process.argv.slice(2) as [string, string, string];
const etcd = new Etcd({ endpoints: [endpoint] });
const session = await Session.create(etcd, { ttl: Number(ttl) });
await new Election(session, prefix).campaign('leader');
process.send?.('leader');
// The parent went away without killing us: nothing left to lead for.
process.on('disconnect', () => process.exit(0));
