import { describe, expect, it } from 'vitest';
import { cardCvcRemovalJobsOf } from './card-cvc-removal.ts';

const tenantId = '8e4b7d20-0000-4000-8000-000000000001';

describe('the CVC removal jobs of a batch of events', () => {
  const now = new Date('2026-03-01T00:00:00.000Z');
  const event = (event_id: string, type: string, data: Record<string, unknown>) => ({
    event_id,
    type,
    data: { tenant_id: tenantId, token_id: 'card-1', ...data },
  });

  it('one job per event that gives a CVC, delayed until its time (at once when it has passed), ids and time only', () => {
    const jobs = cardCvcRemovalJobsOf(
      [
        event('e1', 'TokenCreated', { cvc_expires_at: '2026-03-01T01:00:00.000Z', data_ciphertext: 'tk:x' }),
        event('e2', 'TokenCreated', {}),
        event('e3', 'TokenUpdated', { cvc_expires_at: '2026-02-28T23:00:00.000Z' }),
        event('e4', 'TokenCvcRemoved', { cvc_expires_at: '2026-03-01T01:00:00.000Z' }),
      ],
      now,
    );
    expect(jobs).toEqual([
      {
        name: 'remove-cvc',
        data: { tenant_id: tenantId, token_id: 'card-1', cvc_expires_at: '2026-03-01T01:00:00.000Z' },
        opts: { jobId: 'cvc-e1', delay: 3_600_000 },
      },
      {
        name: 'remove-cvc',
        data: { tenant_id: tenantId, token_id: 'card-1', cvc_expires_at: '2026-02-28T23:00:00.000Z' },
        opts: { jobId: 'cvc-e3', delay: 0 },
      },
    ]);
  });
});
