// The etcdkit-server command: parse etcd's flags, start the embedded server, log like a server,
// and stop cleanly on the first SIGINT or SIGTERM. Exit codes follow etcd: 2 for a command line
// that does not parse (with the usage), 1 for a server that cannot start, 0 after a clean stop.
// With --simulated-members it serves a simulated cluster instead, driven by commands on stdin.
import type { Readable } from 'node:stream';
import { EmbeddedCluster, type EmbeddedClusterOptions } from '../cluster/embedded-cluster.js';
import { EmbeddedEtcd } from '../embedded-etcd.js';
import { etcdVersionTraits } from '../etcd-version.js';
import { createLogger, jsonLogSink, type LogSink } from '../logger.js';
import { memberLine } from './cluster-commands.js';
import { openClusterConsole } from './cluster-console.js';
import { buildConfig, type CliConfig, ConfigError, etcdVersionFlag } from './config.js';
import { FlagError, parseFlags } from './flags.js';
import { shortUsage, usage } from './usage.js';
import { packageVersion } from './version.js';

/** What the command talks to: its output streams, environment and shutdown signal. */
export interface CliEnvironment {
  readonly stdout: (text: string) => void;
  readonly stderr: (text: string) => void;
  /** Read for `ETCD_*` variables. */
  readonly env: Readonly<Record<string, string | undefined>>;
  /**
   * Resolves with the name of the signal that asks the server to stop. Subscribed to before the
   * server starts, so a signal during startup is not lost.
   */
  readonly shutdownSignal: Promise<string>;
  /**
   * Opens the stream a simulated cluster reads its commands from, one a line (stdin); called in
   * that mode only, so a single server never touches stdin. Destroying the stream lets go of it.
   * Absent: no commands.
   */
  readonly openCommandInput?: () => Readable;
}

/** Exit codes of the command. */
export const ExitCode = { ok: 0, failed: 1, usage: 2 } as const;

/** Runs the command with `args` (no program name); resolves with the exit code. */
export async function runCli(
  args: readonly string[],
  environment: CliEnvironment,
): Promise<number> {
  let config: CliConfig;
  try {
    const flags = parseFlags(args, environment.env);
    if (flags.values.get('help') === 'true') {
      environment.stdout(usage());
      return ExitCode.ok;
    }
    if (flags.values.get('version') === 'true') {
      environment.stdout(versionText(etcdReleaseOf(flags.values.get('etcd-version'))));
      return ExitCode.ok;
    }
    config = await buildConfig(flags);
  } catch (error) {
    if (error instanceof FlagError) {
      environment.stderr(`etcdkit-server: ${error.message}\n${shortUsage()}`);
      return ExitCode.usage;
    }
    if (error instanceof ConfigError) {
      environment.stderr(`etcdkit-server: ${error.message}\n`);
      return ExitCode.failed;
    }
    throw error;
  }
  return serve(config, args, environment);
}

async function serve(
  config: CliConfig,
  args: readonly string[],
  environment: CliEnvironment,
): Promise<number> {
  const write = config.logOutput === 'stdout' ? environment.stdout : environment.stderr;
  const sink = jsonLogSink(config.logLevel, write);
  const log = (level: 'info' | 'warn' | 'error', message: string, fields = {}): void =>
    sink({ level, time: new Date(), message, fields });
  log('info', 'starting etcdkit-server', {
    'etcdkit-version': packageVersion(),
    'etcd-version': etcdReleaseOf(config.options.etcdVersion),
    'node-version': process.version,
    'os-arch': `${process.platform}/${process.arch}`,
    args: [...args],
  });
  for (const warning of config.warnings) log('warn', warning);
  if (config.cluster !== undefined) return serveCluster(config.cluster, sink, environment);
  let server: EmbeddedEtcd;
  try {
    server = await EmbeddedEtcd.start({ ...config.options, logger: sink });
  } catch (error) {
    log('error', 'failed to start etcd server', {
      error: error instanceof Error ? error.message : String(error),
    });
    return ExitCode.failed;
  }
  const signal = await environment.shutdownSignal;
  log('info', 'received signal; shutting down', { signal });
  await server.stop();
  return ExitCode.ok;
}

/**
 * Serves a simulated cluster: prints its members on stdout (`member <name> <id> <url>` lines, an
 * `endpoints` line, then `ready`), answers commands from stdin until the shutdown signal, then
 * stops every member.
 */
async function serveCluster(
  options: EmbeddedClusterOptions,
  sink: LogSink,
  environment: CliEnvironment,
): Promise<number> {
  const logger = createLogger(sink);
  let cluster: EmbeddedCluster;
  try {
    cluster = await EmbeddedCluster.start({ ...options, logger: sink });
  } catch (error) {
    logger.error('failed to start the simulated cluster', {
      error: error instanceof Error ? error.message : String(error),
    });
    return ExitCode.failed;
  }
  for (const member of cluster.members) environment.stdout(`${memberLine(member)}\n`);
  environment.stdout(`endpoints ${cluster.endpoints.join(',')}\n`);
  environment.stdout('ready: one command a line on stdin; help lists them\n');
  logger.info('ready to serve client requests', { endpoints: [...cluster.endpoints] });
  const commands =
    environment.openCommandInput === undefined
      ? undefined
      : openClusterConsole(
          cluster,
          environment.openCommandInput(),
          (line) => environment.stdout(`${line}\n`),
          logger,
        );
  const signal = await environment.shutdownSignal;
  commands?.close();
  logger.info('received signal; shutting down', { signal });
  await cluster.stop();
  return ExitCode.ok;
}

/** The release a server started with `--etcd-version` `given` reports. */
function etcdReleaseOf(given: string | undefined): string {
  return etcdVersionTraits(etcdVersionFlag(given)).release;
}

function versionText(etcdRelease: string): string {
  return [
    `etcdkit-server Version: ${packageVersion()}`,
    `etcd Version: ${etcdRelease}`,
    `Node.js Version: ${process.version}`,
    `OS/Arch: ${process.platform}/${process.arch}`,
    '',
  ].join('\n');
}
