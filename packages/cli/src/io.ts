// Where the command writes: the process's streams, or a test's buffers.

/** Output of the etcdkit command. */
export interface Io {
  stdout(text: string): void;
  stderr(text: string): void;
}
