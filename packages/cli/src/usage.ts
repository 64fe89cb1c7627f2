// The --help texts.
import type { CommandName } from './args.js';

const CONNECTION = `Connection flags (etcdctl's; each also read from its ETCDCTL_* variable, the flag wins):
  --endpoints=127.0.0.1:2379   comma-separated; bare host:port uses TLS when --cacert/--cert is set
  --cacert=FILE                CA bundle to verify the servers
  --cert=FILE --key=FILE       client certificate and key (mutual TLS)
  --user=NAME[:PASSWORD]       user for authentication
  --password=PASSWORD          its password, when --user has none
  --dial-timeout=2s            time to connect to one endpoint
`;

const STATUSES = `Exit status:
  CMD's own status when it ran to its end (128+N when signal N ended it)
  0   without CMD: released after SIGINT/SIGTERM
  64  bad flags or arguments          69  etcd unreachable or refused a call
  70  etcdkit's own failure           75  --wait-timeout passed before holding
  79  the hold was lost while CMD ran (CMD's process group was stopped)
  126 CMD cannot be executed          127 CMD not found
`;

const HOLD = `  --ttl=S           TTL of the session's lease, whole seconds
  --wait-timeout=S  give up (status 75) when not held after S seconds; 0: unless free now
  --kill-grace=S    between SIGTERM and SIGKILL to CMD's process group (default: TTL/6, at most 2s)
`;

const TOPICS: Record<CommandName | 'all', string> = {
  all: `etcdkit: run a command on exactly one machine, with etcd.

Usage:
  etcdkit lock [flags] NAME [-- CMD [ARGS...]]
  etcdkit elect [flags] NAME [PROPOSAL | -- CMD [ARGS...]]
  etcdkit semaphore --limit N [flags] NAME -- CMD [ARGS...]

CMD runs in a process group of its own while the lock, leadership or permit is held, and is
stopped (SIGTERM, then SIGKILL after --kill-grace) when the hold is lost, and before its lease can
expire when etcdkit itself stalls. 'etcdkit COMMAND --help' tells more.

${CONNECTION}
${STATUSES}`,
  lock: `etcdkit lock [flags] NAME [-- CMD [ARGS...]]

Queues for the lock NAME in the layout of etcdctl lock and Go's concurrency.Mutex (they exclude
each other), runs CMD once held, releases it when CMD exits and exits with CMD's status. CMD's
environment has ETCD_LOCK_KEY and ETCD_LOCK_REV (etcdctl's), ETCDKIT_KEY, ETCDKIT_FENCING_TOKEN
(the key's create revision: pass it to what CMD writes) and ETCDKIT_LEASE_ID (hex).
SIGINT, SIGTERM and SIGHUP are passed to CMD. Without CMD, as etcdctl lock: prints the key and
holds the lock until SIGINT or SIGTERM.

Flags:
${HOLD.replace('--ttl=S          ', '--ttl=S (10)     ')}
${CONNECTION}
${STATUSES}`,
  elect: `etcdkit elect [flags] NAME [PROPOSAL | -- CMD [ARGS...]]

Campaigns in the election NAME (the layout of etcdctl elect and Go's concurrency.Election) and runs
CMD only while leading; CMD ends, the leadership is resigned. CMD's environment has ETCDKIT_KEY,
ETCDKIT_FENCING_TOKEN, ETCDKIT_LEASE_ID, ETCDKIT_ELECTION_VALUE and ETCDKIT_LEADER_EPOCH.
Without CMD, as etcdctl elect: 'elect NAME PROPOSAL' campaigns, prints the key and value and leads
until SIGINT or SIGTERM; 'elect -l NAME' prints every new leader.

Flags:
  --value=V         the value to campaign with (default: the host name)
  --restart         campaign again after CMD exits or the leadership is lost (a singleton daemon)
  -l, --listen      observe: print the leaders, campaign for nothing
${HOLD.replace('--ttl=S          ', '--ttl=S (60)     ')}
${CONNECTION}
${STATUSES}`,
  semaphore: `etcdkit semaphore --limit N [flags] NAME -- CMD [ARGS...]

At most N holders of NAME across the fleet run their CMD at once (FIFO, Go's key layout under
NAME/). Every participant must give the same --limit. CMD's environment has ETCDKIT_KEY,
ETCDKIT_FENCING_TOKEN and ETCDKIT_LEASE_ID.

Flags:
  --limit=N         how many holders at once
${HOLD.replace('--ttl=S          ', '--ttl=S (10)     ')}
${CONNECTION}
${STATUSES}`,
};

/** The help text of a command, or of etcdkit itself. */
export function usage(topic: CommandName | undefined): string {
  return TOPICS[topic ?? 'all'];
}
