// Reads the simulated cluster's commands from stdin and answers each on stdout, in order. The end
// of stdin only ends the commands: a cluster started in the background, with stdin closed or
// /dev/null, keeps serving until SIGINT or SIGTERM.
import { createInterface } from 'node:readline';
import type { Readable } from 'node:stream';
import type { EmbeddedCluster } from '../cluster/embedded-cluster.js';
import type { ServerLogger } from '../logger.js';
import { runClusterCommand } from './cluster-commands.js';

/** Commands being read; {@link close} stops reading and answering. */
export interface ClusterConsole {
  close(): void;
}

/** Reads commands from `input`, one a line, and writes each answer line with `answer`. */
export function openClusterConsole(
  cluster: EmbeddedCluster,
  input: Readable,
  answer: (line: string) => void,
  logger: ServerLogger,
): ClusterConsole {
  let closed = false;
  // One command at a time: a stop finishes before the next command sees the cluster.
  let previous: Promise<void> = Promise.resolve();
  const lines = createInterface({ input, crlfDelay: Number.POSITIVE_INFINITY, terminal: false });
  lines.on('line', (line) => {
    const text = line.trim();
    if (text === '' || text.startsWith('#')) return;
    previous = previous.then(async () => {
      if (closed) return;
      const reply = await runClusterCommand(cluster, text);
      if (!closed) answer(reply);
    });
  });
  lines.on('close', () => {
    if (!closed) {
      logger.info('stdin closed: no more commands; the cluster serves until SIGINT or SIGTERM', {});
    }
  });
  lines.on('error', (error) => {
    logger.warn('cannot read commands from stdin', { error: error.message });
  });
  return {
    close() {
      closed = true;
      lines.close();
      input.destroy();
    },
  };
}
