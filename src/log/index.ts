/**
 * The one logger. Winston writes JSON lines to a file and readable lines to the console, but only
 * after every entry has passed the allowlist below: a log line carries an event name from code and
 * a handful of id/count fields, never free text. That is how prompt, completion and note text stay
 * out of logs even when a library error quotes them.
 */
import { mkdirSync } from 'node:fs';
import { dirname } from 'node:path';
import winston from 'winston';
import { describeError } from '../errors';

/**
 * Fields a log entry may carry. Anything else is dropped before it is written. Not `itemKey`: an
 * instance key is the site's record id (an encounter number, an MRN) and is never logged; a log line
 * names an instance by its ordinal in the run (tests/security/phi-canary.test.ts plants such keys).
 */
const ALLOWED_FIELDS = new Set([
  'runId',
  'benchmarkId',
  'benchmarkVersion',
  'endpointId',
  'tier',
  'ordinal',
  'status',
  'rule',
  'count',
  'done',
  'blocked',
  'failed',
  'total',
  'attempt',
  'durationMs',
  'latencyMs',
  'errorCode',
  'errorClass',
  'backend',
  'version',
  'migration',
  'port',
  'address',
  'principal',
  'role',
  'seq',
  'exportId',
  'approvalId',
  'workerId',
  'httpStatus',
  'retryInMs',
  'method',
  'route',
  'path',
  'file',
  // The JSON path of a configuration or policy field at fault (src/server/faults.ts), e.g. /principals/0/roles.
  'field',
  // A policy file's kind (principals, endpoints, site-data, config) and the sha256 of the version in force.
  'policy',
  'sha256',
  'keptSha256',
  // A refused TLS handshake (src/server/handshake.ts): a closed reason, the certificate's names as
  // checked there, the issuing CA's fingerprint.
  'reasonCode',
  'commonName',
  'issuerName',
  'issuerFingerprint',
]);
/** Values are ids, counts and codes: anything longer is cut, so a stray text cannot ride along. */
const MAX_VALUE_LENGTH = 160;
/** An event name is a dotted identifier written in code, e.g. `run.item.failed`. */
const EVENT_NAME = /^[a-z][a-z0-9_.:-]{0,80}$/;

export type LogFields = Record<string, unknown>;

export interface Logger {
  debug(event: string, fields?: LogFields): void;
  info(event: string, fields?: LogFields): void;
  warn(event: string, fields?: LogFields): void;
  error(event: string, fields?: LogFields): void;
  close(): Promise<void>;
}

/** Reduces an entry to allowlisted scalar fields. Exported for tests. */
export function sanitizeFields(fields: Record<string, unknown>): Record<string, string | number | boolean> {
  const out: Record<string, string | number | boolean> = {};
  for (const [key, value] of Object.entries(fields)) {
    if (key === 'err') {
      const described = describeError(value);
      out.errorCode = described.code;
      out.errorClass = value instanceof Error ? value.name : typeof value;
      continue;
    }
    if (!ALLOWED_FIELDS.has(key)) continue;
    if (typeof value === 'number' || typeof value === 'boolean') out[key] = value;
    else if (typeof value === 'string') out[key] = value.slice(0, MAX_VALUE_LENGTH);
  }
  return out;
}

export function safeEventName(event: string): string {
  return EVENT_NAME.test(event) ? event : 'log.event-name-rejected';
}

export interface LoggerOptions {
  level?: 'debug' | 'info' | 'warn' | 'error';
  /** JSON-lines file; omitted means console only. */
  file?: string;
  /** Console output; off for commands whose stdout is data (--json) and in tests. */
  console?: boolean;
}

export function createLogger(opts: LoggerOptions = {}): Logger {
  const transports: winston.transport[] = [];
  if (opts.file) {
    mkdirSync(dirname(opts.file), { recursive: true });
    transports.push(
      new winston.transports.File({
        filename: opts.file,
        format: winston.format.combine(winston.format.timestamp(), winston.format.json()),
      }),
    );
  }
  if (opts.console) {
    transports.push(
      new winston.transports.Console({
        stderrLevels: ['debug', 'info', 'warn', 'error'],
        format: winston.format.printf((info) => {
          const { level, message, ...rest } = info;
          const kv = Object.entries(rest)
            .filter(([k]) => typeof k === 'string')
            .map(([k, v]) => `${k}=${String(v)}`)
            .join(' ');
          return `[${level}] ${String(message)}${kv ? ' ' + kv : ''}`;
        }),
      }),
    );
  }
  if (transports.length === 0) transports.push(new winston.transports.Console({ silent: true }));
  const w = winston.createLogger({ level: opts.level ?? 'info', transports });
  const emit = (level: string, event: string, fields: Record<string, unknown> = {}) => w.log(level, safeEventName(event), sanitizeFields(fields));
  return {
    debug: (e, f) => emit('debug', e, f),
    info: (e, f) => emit('info', e, f),
    warn: (e, f) => emit('warn', e, f),
    error: (e, f) => emit('error', e, f),
    close: () =>
      new Promise<void>((resolve) => {
        w.on('finish', () => resolve());
        w.end();
        setTimeout(resolve, 500).unref();
      }),
  };
}

/** A logger that drops everything; for library use without a configured sink. */
export const silentLogger: Logger = createLogger();
