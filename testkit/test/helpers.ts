import { connect } from 'node:net';
import { findEtcdBinary } from '../src/index.js';

/** The real etcd binary, if this machine has one; suites needing it skip without. */
export const etcdLookup = findEtcdBinary();
export const noEtcd = !etcdLookup.found;

/** Resolves when a TCP connection to `port` on 127.0.0.1 succeeds, rejects with its error. */
export function tcpConnect(port: number): Promise<void> {
  return new Promise((resolve, reject) => {
    const socket = connect({ host: '127.0.0.1', port });
    socket.once('connect', () => {
      socket.destroy();
      resolve();
    });
    socket.once('error', reject);
  });
}

/** Whether a process with `pid` exists (signal 0 probes without signalling). */
export function processExists(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
}
