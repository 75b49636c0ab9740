import { describe, expect, it } from 'vitest';
import { clientOf } from './sign-in-caps.ts';

describe('the client of a sign-in cap', () => {
  it.each([
    ['203.0.113.7', '203.0.113.7'],
    ['::ffff:203.0.113.7', '203.0.113.7'],
    ['::FFFF:127.0.0.1', '127.0.0.1'],
    ['2001:db8:5:6::1', '2001:db8:5:6::/64'],
    ['2001:db8:5:6:ffff:1:2:3', '2001:db8:5:6::/64'],
    ['2001:0db8:0005:0006:0:0:0:9', '2001:db8:5:6::/64'],
    ['2001:db8::1', '2001:db8:0:0::/64'],
    ['::1', '0:0:0:0::/64'],
    ['64:ff9b::198.51.100.1', '64:ff9b:0:0::/64'],
    ['1:2:3:4:5:6:1.2.3.4', '1:2:3:4::/64'],
    ['1:2::4:5:6:1.2.3.4', '1:2:0:4::/64'],
    [undefined, 'unknown'],
  ])('%s is %s', (address, client) => {
    expect(clientOf(address)).toBe(client);
  });
});
