import { describe, expect, it } from 'vitest';
import { deliveryBackoffMs } from './delivery-job.ts';

describe('delivery backoff', () => {
  it('doubles from the first delay, capped at 6 h, less a random part of up to half', () => {
    const none = () => 0;
    const most = () => 1;
    expect([1, 2, 3, 4].map((attempts) => deliveryBackoffMs(attempts, 5_000, none))).toEqual([
      5_000, 10_000, 20_000, 40_000,
    ]);
    expect(deliveryBackoffMs(3, 5_000, most)).toBe(10_000);
    expect(deliveryBackoffMs(40, 5_000, none)).toBe(6 * 3600 * 1000);
  });

  it('spans about a day over the default 17 attempts (16 waits, less their jitter)', () => {
    const waits = Array.from({ length: 16 }, (_, index) => deliveryBackoffMs(index + 1, 5_000, () => 0));
    const hours = waits.reduce((sum, wait) => sum + wait, 0) / 3600_000;
    expect(hours).toBeGreaterThan(18);
    expect(hours).toBeLessThan(30);
  });
});
