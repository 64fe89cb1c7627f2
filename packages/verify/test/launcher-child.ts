// A process for etcd-launcher.test.ts: launches etcd (argv[2] members), prints the members' pids
// and its data dir as one JSON line, never stops it, and then exits (argv[3] `exit`) or waits for a
// signal (`wait`).
import { launchEtcd } from '../src/etcd-launcher.js';

const etcd = await launchEtcd({ binary: '/usr/bin/etcd', members: Number(process.argv[2]) });
console.log(JSON.stringify({ pids: etcd.members.map((m) => m.pid), dir: etcd.dir }));
if (process.argv[3] === 'exit') process.exit(0);
else setInterval(() => {}, 60_000);
