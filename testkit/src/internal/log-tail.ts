/** Keeps the last `capacity` lines written to it. */
export class LogTail {
  readonly #lines: string[] = [];
  #partial = '';
  readonly #capacity: number;

  constructor(capacity: number) {
    this.#capacity = capacity;
  }

  write(chunk: Buffer | string): void {
    const text = this.#partial + chunk.toString();
    const parts = text.split('\n');
    this.#partial = parts.pop() ?? '';
    for (const line of parts) this.#push(line);
  }

  /** Marks a boundary (a restart) so the tail reads clearly. */
  note(line: string): void {
    this.#flush();
    this.#push(line);
  }

  toString(): string {
    const lines = this.#partial === '' ? this.#lines : [...this.#lines, this.#partial];
    return lines.join('\n');
  }

  #flush(): void {
    if (this.#partial !== '') {
      this.#push(this.#partial);
      this.#partial = '';
    }
  }

  #push(line: string): void {
    if (line.trim() === '') return;
    this.#lines.push(line);
    if (this.#lines.length > this.#capacity) this.#lines.shift();
  }
}
