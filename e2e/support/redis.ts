import { Redis } from 'ioredis';

/**
 * Every key and value in the Redis database (or only of the keys matching a SCAN MATCH pattern),
 * read by type (DUMP's serialisation may compress a long string, which would hide a marker from a
 * plain search).
 */
export async function everyRedisValue(url: string, match?: string): Promise<string[]> {
  const redis = new Redis(url);
  try {
    const values: string[] = [];
    let cursor = '0';
    do {
      const [next, keys] = match
        ? await redis.scan(cursor, 'MATCH', match, 'COUNT', 1000)
        : await redis.scan(cursor, 'COUNT', 1000);
      cursor = next;
      for (const key of keys) {
        values.push(key);
        switch (await redis.type(key)) {
          case 'string':
            values.push((await redis.get(key)) ?? '');
            break;
          case 'hash':
            values.push(...Object.entries(await redis.hgetall(key)).flat());
            break;
          case 'list':
            values.push(...(await redis.lrange(key, 0, -1)));
            break;
          case 'set':
            values.push(...(await redis.smembers(key)));
            break;
          case 'zset':
            values.push(...(await redis.zrange(key, 0, -1)));
            break;
          case 'stream':
            for (const [id, fields] of await redis.xrange(key, '-', '+')) values.push(id, ...fields);
            break;
        }
      }
    } while (cursor !== '0');
    return values;
  } finally {
    redis.disconnect();
  }
}
