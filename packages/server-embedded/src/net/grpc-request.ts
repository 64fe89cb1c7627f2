// What grpc-js's server reads from a request's headers, read the same way by the server's own
// HTTP/2 (h2/), so a call's metadata and deadline are what they were on grpc-js's server.

/** The request headers grpc-js keeps out of a call's metadata. */
export const NOT_METADATA: ReadonlySet<string> = new Set([
  'grpc-timeout',
  'grpc-encoding',
  'grpc-accept-encoding',
  'accept-encoding',
  'te',
  'content-type',
]);

/** A text metadata value grpc-js keeps: printable ASCII only (it drops any other). */
export const PRINTABLE_ASCII = /^[ -~]*$/;

const TIMEOUT = /(\d{1,8})\s*([HMSmun])/;
const TIMEOUT_UNIT_MS: Readonly<Record<string, number>> = {
  H: 3_600_000,
  M: 60_000,
  S: 1000,
  m: 1,
  u: 0.001,
  n: 0.000_001,
};

/** A grpc-timeout header in whole milliseconds as grpc-js reads it; undefined if it does not parse. */
export function grpcTimeoutMs(value: string): number | undefined {
  const match = TIMEOUT.exec(value);
  if (match === null) return undefined;
  return (Number(match[1]) * TIMEOUT_UNIT_MS[match[2]!]!) | 0;
}
