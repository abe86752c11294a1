import { pino, type Logger } from 'pino';

export type { Logger };

/**
 * JSON lines on stdout. Header values that carry secrets are redacted wherever a request object
 * ends up in a log line.
 */
export function createLogger(level: string, destination?: NodeJS.WritableStream): Logger {
  return pino(
    {
      level,
      base: { service: 'cinv' },
      redact: {
        paths: ['req.headers["x-api-key"]', 'req.headers.cookie', 'req.headers.authorization'],
        censor: '[redacted]',
      },
    },
    destination ?? process.stdout,
  );
}
