import { describe, expect, it } from 'vitest';
import { publicEvents } from './public-events.ts';

// The key operations' events are published, but never a ciphertext or a key.
describe('key events on Kafka', () => {
  it('TokenReencrypted publishes who and when, never the ciphertext', () => {
    const published = publicEvents.TokenReencrypted!.schema.parse({
      token_id: 't',
      tenant_id: 'x',
      type: 'card',
      data_ciphertext: 'tk:v1.SECRET',
      reencrypted_by: 'system',
      reencrypted_at: '2026-01-01T00:00:00.000Z',
    });
    expect(JSON.stringify(published)).not.toContain('SECRET');
    expect(published).toMatchObject({ token_id: 't', type: 'card' });
  });

  it('TenantKeyRotated and TenantKeyRewrapped drop any key field', () => {
    for (const [type, data] of [
      [
        'TenantKeyRotated',
        { tenant_id: 'x', version: 2, previous_version: 1, token_keys_rewrapped: 3, rotated_at: 'now' },
      ],
      [
        'TenantKeyRewrapped',
        {
          tenant_id: 'x',
          version: 1,
          master_key_version: 'b',
          previous_master_key_version: 'a',
          rewrapped_at: 'now',
        },
      ],
    ] as const) {
      const published = publicEvents[type]!.schema.parse({ ...data, wrapped_data_key: 'v1.SECRET' });
      expect(JSON.stringify(published)).not.toContain('SECRET');
    }
  });
});
