import pg from 'pg';
import { pino, stdSerializers, type Logger } from 'pino';
import { PinoPretty } from 'pino-pretty';
import type { Config } from './config.ts';
import { tenantCodeLogFields, tenantCodeOrigin } from './tenant-code-errors.ts';

export type { Logger };

/**
 * PostgreSQL's messages and the fields pg adds (detail, where, internalQuery, hint, the statement's
 * parameters) quote the values of the failing statement, and events hold invitees' addresses. Only
 * fields that name things, never values, are kept; the message is a fixed one and the stack loses
 * its first line (it repeats the message).
 */
function databaseErrorFields(error: pg.DatabaseError): Record<string, unknown> {
  const named = {
    code: error.code,
    severity: error.severity,
    constraint: error.constraint,
    table: error.table,
    column: error.column,
    routine: error.routine,
  };
  return {
    type: 'DatabaseError',
    message: `PostgreSQL error ${error.code ?? 'without a code'} (its text may quote values: not logged)`,
    ...Object.fromEntries(Object.entries(named).filter(([, value]) => value !== undefined)),
    stack: error.stack?.split('\n').slice(1).join('\n'),
  };
}

/**
 * pino's error serializer, with every PostgreSQL error it holds (causes too) reduced to safe fields,
 * and every error marked as tenant code's (tenant-code-errors.ts) reduced to its class and id: its
 * message, stack and detail are the code's own text and can quote the data it was given.
 */
export function serializeError(error: unknown): unknown {
  const fromTenantCode = tenantCodeOrigin(error);
  if (fromTenantCode) return tenantCodeLogFields(fromTenantCode);
  if (error instanceof pg.DatabaseError) return databaseErrorFields(error);
  if (!(error instanceof Error)) return error;
  const serialized = stdSerializers.err(error) as unknown as Record<string, unknown>;
  // pino folds the causes' messages and stacks into this error's: keep its own, serialize each cause.
  serialized.message = error.message;
  serialized.stack = error.stack;
  for (const [key, value] of Object.entries(error)) {
    if (value instanceof Error) serialized[key] = serializeError(value);
  }
  const { cause } = error as { cause?: unknown };
  if (cause !== undefined) serialized.cause = serializeError(cause);
  if (error instanceof AggregateError) serialized.aggregateErrors = error.errors.map(serializeError);
  return serialized;
}

/** The line's message when the only one given would be a tenant code error's own (`logger.error(err)`). */
const tenantCodeMessage = 'tenant code failed';

/**
 * Headers and bodies can carry keys and token data: they are never logged. Redaction is a second
 * line of defence for anything that slips into a log object by mistake. An error logged under any
 * field, not only `err`, goes through serializeError; and a tenant code error never lends its
 * message to the line (pino's default when no message is given).
 */
export function createLogger(
  level: string,
  name = 'tokenvault',
  destination?: NodeJS.WritableStream,
): Logger {
  const options = {
    name,
    level,
    serializers: { err: serializeError },
    formatters: {
      log(object: Record<string, unknown>): Record<string, unknown> {
        let serialized: Record<string, unknown> | undefined;
        for (const [key, value] of Object.entries(object)) {
          if (key === 'err' || !(value instanceof Error)) continue;
          serialized ??= { ...object };
          serialized[key] = serializeError(value);
        }
        return serialized ?? object;
      },
    },
    hooks: {
      logMethod(this: Logger, args: unknown[], method: (...args: unknown[]) => void): void {
        const [first, second] = args;
        const error = first instanceof Error ? first : (first as { err?: unknown } | null)?.err;
        if (typeof second !== 'string' && tenantCodeOrigin(error)) {
          method.apply(this, [first instanceof Error ? { err: first } : first, tenantCodeMessage]);
          return;
        }
        method.apply(this, args);
      },
    },
    redact: {
      paths: [
        'req.headers["svc-api-key"]',
        'req.headers.authorization',
        'req.headers.cookie',
        'body',
        'data',
        'api_key',
        '*.data',
        '*.api_key',
        '*.token',
      ],
      censor: '[redacted]',
    },
  };
  return destination ? pino(options, destination) : pino(options);
}

/**
 * Where a process writes its log lines: standard output as JSON (what log shippers and the tests
 * read), or through pino-pretty as coloured, human lines (LOG_FORMAT=pretty, the default when
 * NODE_ENV=development). The pretty stream is synchronous, so a line written just before an exit
 * is not lost, and it also takes the JSON lines other threads of the process hand it.
 */
export function logDestinationFor(config: Pick<Config, 'LOG_FORMAT' | 'NODE_ENV'>): NodeJS.WritableStream {
  const format = config.LOG_FORMAT ?? (config.NODE_ENV === 'development' ? 'pretty' : 'json');
  if (format === 'json') return process.stdout;
  return PinoPretty({ sync: true, destination: 1, translateTime: 'SYS:HH:MM:ss.l', ignore: 'pid,hostname' });
}
