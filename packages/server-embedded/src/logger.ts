// The server's log: a few lines about its life (started, listening, ready, restarted, stopped) and,
// at debug level, one per client connection. Silent by default, since the server usually runs
// inside a test; the CLI logs at info to stderr as JSON lines shaped like etcd's (zap) output, so
// tools that read etcd's logs read these too.

/** How much a log line matters, from least to most. */
export type LogLevel = 'debug' | 'info' | 'warn' | 'error';

/** The value of one field of a log line. */
export type LogValue = string | number | boolean | readonly string[];

/** One line of the server's log. */
export interface LogEntry {
  readonly level: LogLevel;
  /** When it was logged (wall-clock time, also with a virtual server clock). */
  readonly time: Date;
  /** What happened, e.g. `ready to serve client requests`. */
  readonly message: string;
  /** Details, by name in etcd's style (`address`, `remote-addr`, `revision`...). */
  readonly fields: Readonly<Record<string, LogValue>>;
}

/** Receives every line the server logs, debug ones included. */
export type LogSink = (entry: LogEntry) => void;

/**
 * The `logger` option: `'silent'` (the default), a level (lines at that level and above are
 * written to stderr as JSON lines), or a function that receives every line.
 */
export type LoggerOption = 'silent' | LogLevel | LogSink;

/** What the server logs through. */
export interface ServerLogger {
  /** Whether a line at `level` goes anywhere (to skip building costly fields). */
  enabled(level: LogLevel): boolean;
  debug(message: string, fields?: Readonly<Record<string, LogValue>>): void;
  info(message: string, fields?: Readonly<Record<string, LogValue>>): void;
  warn(message: string, fields?: Readonly<Record<string, LogValue>>): void;
  error(message: string, fields?: Readonly<Record<string, LogValue>>): void;
}

const SEVERITY: Record<LogLevel, number> = { debug: 0, info: 1, warn: 2, error: 3 };

/** The log levels, least important first. */
export const LOG_LEVELS: readonly LogLevel[] = ['debug', 'info', 'warn', 'error'];

/**
 * A sink writing lines at `level` and above as JSON, one per line, through `write`
 * (default: stderr, where etcd logs).
 */
export function jsonLogSink(
  level: LogLevel,
  write: (line: string) => void = (line) => process.stderr.write(line),
): LogSink {
  const threshold = SEVERITY[level];
  return (entry) => {
    if (SEVERITY[entry.level] >= threshold) write(`${formatLogLine(entry)}\n`);
  };
}

/** A log line as etcd's zap logger writes it: `{"level","ts","msg",...fields}`. */
export function formatLogLine(entry: LogEntry): string {
  return JSON.stringify({
    level: entry.level,
    ts: entry.time.toISOString(),
    msg: entry.message,
    ...entry.fields,
  });
}

/** The logger a {@link LoggerOption} stands for. */
export function createLogger(option: LoggerOption | undefined): ServerLogger {
  if (option === undefined || option === 'silent') return loggerOf(undefined, 4);
  if (typeof option === 'function') return loggerOf(option, 0);
  return loggerOf(jsonLogSink(option), SEVERITY[option]);
}

function loggerOf(sink: LogSink | undefined, threshold: number): ServerLogger {
  const log =
    (level: LogLevel) =>
    (message: string, fields: Readonly<Record<string, LogValue>> = {}): void => {
      if (sink === undefined || SEVERITY[level] < threshold) return;
      try {
        sink({ level, time: new Date(), message, fields });
      } catch {
        // A failing log sink must not take a connection or the server down with it.
      }
    };
  return {
    enabled: (level) => sink !== undefined && SEVERITY[level] >= threshold,
    debug: log('debug'),
    info: log('info'),
    warn: log('warn'),
    error: log('error'),
  };
}
