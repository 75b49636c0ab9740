import { describe, expect, it } from 'vitest';
import { deciderSpec } from '@tokenvault/cqrs/testing';
import { fold } from '@tokenvault/cqrs';
import { signingKeyDecider, type SigningKeyCommand } from './signing-key.ts';
import type { WebhooksEvent } from './webhooks.events.ts';

const tenantId = '5b1f0a1e-0000-4000-8000-000000000001';
const actorId = '5b1f0a1e-0000-4000-8000-000000000002';
const now = '2026-03-01T00:00:00.000Z';
const later = '2026-03-02T00:00:00.000Z';
const overlapSeconds = 3600;
const first = { tenantId, actorId, now, keyId: 'key-1', secretCiphertext: 'sealed-1', overlapSeconds };

type Rotated = Extract<WebhooksEvent, { type: 'WebhookSigningKeyRotated' }>;
const created: Rotated = {
  type: 'WebhookSigningKeyRotated',
  data: {
    tenant_id: tenantId,
    key_id: 'key-1',
    secret_ciphertext: 'sealed-1',
    rotated_by: actorId,
    rotated_at: now,
  },
};
const rotate: SigningKeyCommand = {
  type: 'RotateSigningKey',
  ...first,
  now: later,
  keyId: 'key-2',
  secretCiphertext: 'sealed-2',
};
// The replaced key signs until the configured overlap after the rotation.
const overlapEnd = '2026-03-02T01:00:00.000Z';
const rotated: Rotated = {
  type: 'WebhookSigningKeyRotated',
  data: {
    tenant_id: tenantId,
    key_id: 'key-2',
    secret_ciphertext: 'sealed-2',
    previous_key_id: 'key-1',
    previous_valid_until: overlapEnd,
    rotated_by: actorId,
    rotated_at: later,
  },
};
const spec = deciderSpec(signingKeyDecider);

describe('signing key decider', () => {
  it('creates the first key once: a second create decides nothing', () => {
    spec
      .given([])
      .when({ type: 'CreateSigningKey', ...first })
      .then([created]);
    spec
      .given([created])
      .when({ type: 'CreateSigningKey', ...first, keyId: 'key-9' })
      .then([]);
  });

  it('rotates: the replaced key keeps signing for the overlap window, the one before it no more', () => {
    spec.given([created]).when(rotate).then([rotated]);
    expect(fold(signingKeyDecider, [created, rotated]).keys).toEqual([
      { key_id: 'key-2', secret_ciphertext: 'sealed-2' },
      { key_id: 'key-1', secret_ciphertext: 'sealed-1', valid_until: overlapEnd },
    ]);
    const third: Rotated = {
      type: 'WebhookSigningKeyRotated',
      data: { ...rotated.data, key_id: 'key-3', secret_ciphertext: 'sealed-3', previous_key_id: 'key-2' },
    };
    expect(fold(signingKeyDecider, [created, rotated, third]).keys.map((key) => key.key_id)).toEqual([
      'key-3',
      'key-2',
    ]);
  });

  it('a rotation with no key yet is the first key', () => {
    spec
      .given([])
      .when({ ...rotate, now })
      .then([{ ...created, data: { ...created.data, key_id: 'key-2', secret_ciphertext: 'sealed-2' } }]);
  });
});
