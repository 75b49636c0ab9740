import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * Headers and bodies can carry keys and token data: they are never logged. Redaction is a second
 * line of defence for anything that slips into a log object by mistake.
 */
export function createLogger(
  level: string,
  name = 'tokenvault',
  destination?: NodeJS.WritableStream,
): Logger {
  const options = {
    name,
    level,
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
