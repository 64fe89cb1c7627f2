// Durations written as Go writes them (`10m`, `1h30m`, `1.5s`, `250ms`), since etcd's flags take
// Go durations and scripts pass them unchanged.

const UNIT_MS: Record<string, number> = {
  ns: 1e-6,
  us: 1e-3,
  µs: 1e-3,
  μs: 1e-3,
  ms: 1,
  s: 1000,
  m: 60_000,
  h: 3_600_000,
};

const PART = /^(\d*\.?\d*)(ns|us|µs|μs|ms|s|m|h)/;

/**
 * Parses a Go duration into milliseconds; undefined when `text` is not one. A sign is allowed;
 * every number needs a unit, except a bare `0`.
 */
export function parseGoDuration(text: string): number | undefined {
  let rest = text;
  let sign = 1;
  if (rest.startsWith('-') || rest.startsWith('+')) {
    sign = rest.startsWith('-') ? -1 : 1;
    rest = rest.slice(1);
  }
  if (rest === '0') return 0;
  if (rest === '') return undefined;
  let total = 0;
  while (rest !== '') {
    const match = PART.exec(rest);
    if (match === null) return undefined;
    const number = match[1]!;
    if (number === '' || number === '.') return undefined;
    total += Number(number) * UNIT_MS[match[2]!]!;
    rest = rest.slice(match[0].length);
  }
  return sign * total;
}
