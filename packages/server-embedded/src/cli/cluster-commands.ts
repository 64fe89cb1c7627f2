// The commands that drive a simulated cluster by hand, one a line: stop, start, partition or pause
// a member, elect a leader, start a member MemberAdd added, and see the outcome. Each answers one line: `ok` and the cluster's state
// after it (so every step of a failover trial shows who leads now), or `error` and why.
import type { EmbeddedClusterMember } from '../cluster/cluster-member.js';
import type { EmbeddedCluster } from '../cluster/embedded-cluster.js';

/** A command line that cannot run: unknown command, missing or unknown member. */
export class CommandError extends Error {
  /** Stable identifier of the failure. */
  readonly code = 'INVALID_COMMAND';

  constructor(message: string) {
    super(message);
    this.name = 'CommandError';
  }
}

/** One command of the control surface. */
export interface ClusterCommand {
  readonly name: string;
  /**
   * Its argument as the help writes it: none, a member, an optional member, or the id of a voting
   * member MemberAdd added and that has not started.
   */
  readonly argument: '' | '<member>' | '[<member>]' | '<added-member-id>';
  readonly help: string;
}

interface RunnableCommand extends ClusterCommand {
  run(cluster: EmbeddedCluster, member: EmbeddedClusterMember | undefined): unknown;
}

const COMMANDS: readonly RunnableCommand[] = [
  {
    name: 'status',
    argument: '',
    help: 'who leads, the raft term and the state of every member',
    run: () => {},
  },
  {
    name: 'stop',
    argument: '<member>',
    help: 'stop the member as a crash would: its port refuses connections',
    run: (_, member) => member!.stop(),
  },
  {
    name: 'start',
    argument: '<member>',
    help: 'start a stopped member again, on the same port',
    run: (_, member) => member!.start(),
  },
  {
    name: 'restart',
    argument: '<member>',
    help: 'stop the member, then start it',
    run: (_, member) => member!.restart(),
  },
  {
    name: 'partition',
    argument: '<member>',
    help: 'cut the member off from the others; its clients still reach it',
    run: (_, member) => member!.partition(),
  },
  {
    name: 'heal',
    argument: '[<member>]',
    help: 'end the partition of the member, or of every member',
    run: (cluster, member) => {
      for (const healed of member === undefined ? cluster.members : [member]) healed.heal();
    },
  },
  {
    name: 'pause',
    argument: '<member>',
    help: 'pause the member as SIGSTOP would: connections stay open, nothing is answered',
    run: (_, member) => member!.pause(),
  },
  {
    name: 'resume',
    argument: '<member>',
    help: 'resume a paused member',
    run: (_, member) => member!.resume(),
  },
  {
    name: 'elect',
    argument: '<member>',
    help: 'make the member the leader, in a new term (it must be reachable)',
    run: (cluster, member) => cluster.elect(member!),
  },
  {
    name: 'join',
    argument: '<added-member-id>',
    help: 'start the member (voting or learner) MemberAdd added (etcdctl member add), on a free port',
    run: () => {},
  },
  { name: 'help', argument: '', help: 'list the commands', run: () => {} },
];

/** The commands, in the order the help lists them. */
export const CLUSTER_COMMANDS: readonly ClusterCommand[] = COMMANDS;

/** `name <argument>`, as the help shows a command. */
export function commandSynopsis(command: ClusterCommand): string {
  return command.argument === '' ? command.name : `${command.name} ${command.argument}`;
}

/**
 * Runs one command line and answers it in one line: `ok ...` or `error <message>`. A member is
 * named by its name (`member1`) or its id in hex, as the startup lines print them.
 */
export async function runClusterCommand(cluster: EmbeddedCluster, line: string): Promise<string> {
  try {
    const [name = '', ...args] = line.trim().split(/\s+/);
    const command = COMMANDS.find((candidate) => candidate.name === name);
    if (command === undefined) {
      throw new CommandError(
        `unknown command ${JSON.stringify(name)}: ${COMMANDS.map((c) => c.name).join(', ')}`,
      );
    }
    if (command.name === 'help') {
      return `ok commands: ${COMMANDS.map(commandSynopsis).join(', ')}; a member is its name or id`;
    }
    if (command.argument === '<added-member-id>') return await join(cluster, command, args);
    const member = memberArgument(cluster, command, args);
    await command.run(cluster, member);
    return `ok ${clusterStatus(cluster)}`;
  } catch (error) {
    return `error ${error instanceof Error ? error.message : String(error)}`;
  }
}

/** `join`: the new member's startup line (name, id, client URL), then the state. */
async function join(
  cluster: EmbeddedCluster,
  command: ClusterCommand,
  args: readonly string[],
): Promise<string> {
  const id = args.length === 1 ? memberId(args[0]!) : undefined;
  if (id === undefined) {
    throw new CommandError(`usage: ${commandSynopsis(command)} (the id in hex)`);
  }
  const member = await cluster.startAdded(id);
  return `ok ${memberLine(member)} ${clusterStatus(cluster)}`;
}

/** `member <name> <id in hex> <client URL>`: a member as the startup lines and `join` print it. */
export function memberLine(member: EmbeddedClusterMember): string {
  return `member ${member.name} ${member.memberId.toString(16)} ${member.endpoint}`;
}

/** A member id as the startup lines print it (hex, up to 64 bits); undefined for anything else. */
function memberId(text: string): bigint | undefined {
  return /^[0-9a-f]{1,16}$/i.test(text) ? BigInt(`0x${text}`) : undefined;
}

function memberArgument(
  cluster: EmbeddedCluster,
  command: ClusterCommand,
  args: readonly string[],
): EmbeddedClusterMember | undefined {
  const most = command.argument === '' ? 0 : 1;
  const least = command.argument === '<member>' ? 1 : 0;
  if (args.length < least || args.length > most) {
    throw new CommandError(`usage: ${commandSynopsis(command)}`);
  }
  const given = args[0];
  if (given === undefined) return undefined;
  const id = memberId(given);
  const member = cluster.member(given) ?? (id === undefined ? undefined : cluster.member(id));
  if (member === undefined) {
    const names = cluster.members.map((m) => m.name).join(', ');
    throw new CommandError(`unknown member ${JSON.stringify(given)}: ${names}, or a member id`);
  }
  return member;
}

/**
 * The cluster in one line of `key=value` fields: `leader=member1 term=3` (`leader=none` without a
 * quorum), then each member's state: `leader`, `follower`, `learner`, `no-leader` (running but
 * without a quorum), or what was done to it: `stopped`, `partitioned`, `paused`, joined by `+`;
 * last, when voting members were added and have not started, `unstarted=<count>` (they count for
 * the quorum).
 */
export function clusterStatus(cluster: EmbeddedCluster): string {
  const members = cluster.members.map(
    (member) => `${member.name}=${memberState(member, cluster.isLearner(member.memberId))}`,
  );
  const startedVoting = cluster.members.filter((member) => !cluster.isLearner(member.memberId));
  const unstarted = cluster.votingMembers - startedVoting.length;
  return [
    `leader=${cluster.leader?.name ?? 'none'}`,
    `term=${cluster.term}`,
    ...members,
    ...(unstarted > 0 ? [`unstarted=${unstarted}`] : []),
  ].join(' ');
}

function memberState(member: EmbeddedClusterMember, learner: boolean): string {
  const faults = [
    member.running ? undefined : 'stopped',
    member.partitioned ? 'partitioned' : undefined,
    member.paused ? 'paused' : undefined,
  ].filter((fault) => fault !== undefined);
  if (faults.length > 0) return faults.join('+');
  if (member.isLeader) return 'leader';
  if (learner) return 'learner';
  return member.leaderId === 0n ? 'no-leader' : 'follower';
}
