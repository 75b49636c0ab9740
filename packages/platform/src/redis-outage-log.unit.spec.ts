import { Writable } from 'node:stream';
import { describe, expect, it } from 'vitest';
import { createLogger } from './logger.ts';
import { RedisOutageLog, redisOutageLogIntervalMs } from './redis-outage-log.ts';

/** A real logger writing into an array of parsed lines, and a clock the test moves. */
function setUp() {
  type Line = { level: number; msg: string; [key: string]: unknown };
  const lines: Line[] = [];
  const destination = new Writable({
    write(chunk: Buffer, _encoding, done) {
      for (const line of chunk.toString().split('\n').filter(Boolean)) lines.push(JSON.parse(line) as Line);
      done();
    },
  });
  let now = 1_000_000;
  const log = new RedisOutageLog(createLogger('info', 'test', destination), () => now);
  return { lines, log, advance: (ms: number) => (now += ms) };
}

const refused = () => new Error('connect ECONNREFUSED 127.0.0.1:6379');

describe('RedisOutageLog', () => {
  it('logs one warning naming REDIS_URL for a burst of errors from every connection', () => {
    const { lines, log, advance } = setUp();
    for (let attempt = 0; attempt < 50; attempt++) {
      log.listener('redis')(refused());
      log.listener('webhook delivery queue')(refused());
      advance(500);
    }
    expect(lines).toHaveLength(1);
    expect(lines[0]?.msg).toMatch(/^Redis unreachable \(REDIS_URL\)/);
    expect(lines[0]?.source).toBe('redis');
  });

  it('logs at most one line a minute while the outage lasts, counting the errors it stands for', () => {
    const { lines, log, advance } = setUp();
    log.error('redis', refused());
    for (let second = 1; second <= 150; second++) {
      advance(1_000);
      log.error('redis', refused());
    }
    expect(lines.map((line) => line.msg)).toEqual([
      expect.stringMatching(/^Redis unreachable/),
      'Redis still unreachable (REDIS_URL)',
      'Redis still unreachable (REDIS_URL)',
    ]);
    expect(lines[1]?.errors_since_last_line).toBe(redisOutageLogIntervalMs / 1_000);
  });

  it('logs the recovery once, and a later outage warns again at once', () => {
    const { lines, log, advance } = setUp();
    log.error('redis', refused());
    advance(5_000);
    log.recovered();
    log.recovered();
    advance(1_000);
    log.error('redis', refused());
    expect(lines.map((line) => line.msg)).toEqual([
      expect.stringMatching(/^Redis unreachable/),
      'Redis reachable again (REDIS_URL)',
      expect.stringMatching(/^Redis unreachable/),
    ]);
  });
});
