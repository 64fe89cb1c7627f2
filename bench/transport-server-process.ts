// The parent side of transport-server.ts, shared by the transport and transport-cpu suites: forks
// the child (an in-memory EmbeddedEtcd and its writer) and asks it for watch events.
import { type ChildProcess, fork } from 'node:child_process';
import { fileURLToPath } from 'node:url';

/** The embedded server in its child process, and the writer that makes watch events there. */
export interface TransportServer {
  readonly endpoints: readonly string[];
  /** Puts `count` values to `key` (round-robin over `<key>0` .. `<key><keys - 1>` with `keys`). */
  write(key: string, count: number, keys?: number): Promise<void>;
  stop(): void;
}

const script = fileURLToPath(new URL('./transport-server.ts', import.meta.url));

/** Forks transport-server.ts and resolves once its server answers on its endpoints. */
export async function forkTransportServer(): Promise<TransportServer> {
  const child: ChildProcess = fork(script, [], { execArgv: process.execArgv, stdio: 'inherit' });
  const endpoints = await new Promise<string[]>((resolve, reject) => {
    child.once('message', (message: { endpoints: string[] }) => resolve(message.endpoints));
    child.once('exit', (code) => reject(new Error(`server process exited (${code})`)));
  });
  const waiting = new Map<number, () => void>();
  let next = 0;
  child.on('message', (message: { id: number }) => {
    waiting.get(message.id)?.();
    waiting.delete(message.id);
  });
  return {
    endpoints,
    write: (key, count, keys) =>
      new Promise((resolve) => {
        const id = next++;
        waiting.set(id, resolve);
        child.send({ id, key, count, keys });
      }),
    stop: () => child.kill('SIGTERM'),
  };
}
