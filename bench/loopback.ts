// The machine's floor for the recipes suite's round trips: one byte sent to another Node process
// over loopback TCP and echoed back, each after the same pause as a handoff's release. No etcd, no
// gRPC, no HTTP/2: what two event loops on this machine cost, and how their tail looks.
import { type ChildProcess, fork } from 'node:child_process';
import { connect, type Socket } from 'node:net';
import { fileURLToPath } from 'node:url';

const script = fileURLToPath(new URL('./loopback-echo.ts', import.meta.url));
const sleep = (ms: number) => new Promise<void>((resolve) => setTimeout(resolve, ms));

/** An echo process and a connection to it. */
export class LoopbackEcho {
  readonly #child: ChildProcess;
  readonly #socket: Socket;

  private constructor(child: ChildProcess, socket: Socket) {
    this.#child = child;
    this.#socket = socket;
  }

  static async start(): Promise<LoopbackEcho> {
    const child = fork(script, [], { execArgv: process.execArgv, stdio: 'inherit' });
    const port = await new Promise<number>((resolve, reject) => {
      child.once('message', (message) => resolve(Number(message)));
      child.once('exit', (code) => reject(new Error(`echo process exited (${code})`)));
    });
    const socket = connect(port, '127.0.0.1');
    socket.setNoDelay(true);
    await new Promise<void>((resolve, reject) => {
      socket.once('connect', resolve);
      socket.once('error', reject);
    });
    return new LoopbackEcho(child, socket);
  }

  /** `count` round trips of one byte, each sent `gapMs` after the previous one came back. */
  async roundTrips(count: number, gapMs: number): Promise<number[]> {
    const samples: number[] = [];
    for (let i = 0; i < count; i++) {
      await sleep(gapMs);
      const started = performance.now();
      await new Promise<void>((resolve) => {
        this.#socket.once('data', () => resolve());
        this.#socket.write('x');
      });
      samples.push(performance.now() - started);
    }
    return samples;
  }

  async stop(): Promise<void> {
    this.#socket.destroy();
    const exited = new Promise<void>((resolve) => this.#child.once('exit', () => resolve()));
    this.#child.kill();
    await exited;
  }
}
