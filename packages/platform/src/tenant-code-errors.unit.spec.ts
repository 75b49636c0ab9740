import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { Problem } from './errors.ts';
import { createLogger } from './logger.ts';
import { markTenantCode, tenantCodeOrigin } from './tenant-code-errors.ts';

const cardNumber = '4242424242424242';

/** A logger at every level, and the lines it wrote. */
function capturedLogger() {
  const lines: string[] = [];
  const sink = new Writable({
    write(chunk: Buffer, _encoding, done) {
      lines.push(chunk.toString('utf8'));
      done();
    },
  });
  return { logger: createLogger('trace', 'test', sink), lines };
}

const tenantError = () =>
  markTenantCode(
    new Problem(500, 'reactor/ReactorRuntimeError', 'Internal Server Error', `declined card ${cardNumber}`, {
      card: [`declined ${cardNumber}`],
    }),
    { className: 'ReactorRuntimeError', source: 'reactors/r1' },
  );

describe('errors marked as tenant code’s: the log gets their class and id, never their text', () => {
  it('marks an error invisibly: the caller’s answer and JSON are unchanged', () => {
    const error = tenantError();
    expect(tenantCodeOrigin(error)).toEqual({
      errorId: expect.stringMatching(/^[0-9a-f-]{36}$/) as unknown,
      className: 'ReactorRuntimeError',
      source: 'reactors/r1',
    });
    expect(JSON.stringify(error)).not.toContain('tenant');
    expect(error.toJSON()).toMatchObject({ detail: `declined card ${cardNumber}` });
    expect(tenantCodeOrigin(new Error('x'))).toBeUndefined();
    expect(tenantCodeOrigin('text')).toBeUndefined();
    expect(tenantCodeOrigin(null)).toBeUndefined();
  });

  it('whatever logs it, however: under err, under another field, as a cause, alone, without a message', () => {
    const { logger, lines } = capturedLogger();
    const error = tenantError();
    logger.error({ err: error, requestId: 'req-1' }, 'request failed');
    logger.warn({ error, problem: error }, 'under other names');
    logger.error({ err: new Error('wrapped', { cause: error }) }, 'with a cause');
    logger.error({ err: new AggregateError([error], 'several') }, 'aggregated');
    logger.error(error);
    logger.info({ err: error });
    const log = lines.join('');
    expect(log).not.toContain(cardNumber);
    expect(log).not.toContain('declined');
    const entries = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    const logged = {
      type: 'ReactorRuntimeError',
      tenantCode: true,
      errorId: tenantCodeOrigin(error)!.errorId,
      source: 'reactors/r1',
    };
    expect(entries[0]).toMatchObject({ err: logged, requestId: 'req-1', msg: 'request failed' });
    expect(entries[1]).toMatchObject({ error: logged, problem: logged });
    expect(entries[2]).toMatchObject({ err: { message: 'wrapped', cause: logged } });
    expect(entries[3]).toMatchObject({ err: { aggregateErrors: [logged] } });
    // pino would take the error's message as the line's: a fixed one instead.
    expect(entries[4]).toMatchObject({ err: logged, msg: 'tenant code failed' });
    expect(entries[5]).toMatchObject({ err: logged, msg: 'tenant code failed' });
  });

  it('other errors are logged as before, under any field', () => {
    const { logger, lines } = capturedLogger();
    logger.error({ err: new TypeError('not tenant'), other: new RangeError('also kept') }, 'failed');
    logger.error(new Error('its own message'));
    const [first, second] = lines.map((line) => JSON.parse(line) as Record<string, unknown>);
    expect(first).toMatchObject({
      err: { type: 'TypeError', message: 'not tenant' },
      other: { type: 'RangeError', message: 'also kept' },
      msg: 'failed',
    });
    expect(second).toMatchObject({ err: { message: 'its own message' }, msg: 'its own message' });
  });
});
