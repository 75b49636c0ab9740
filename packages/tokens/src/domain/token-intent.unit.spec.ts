import { describe, expect, it } from 'vitest';
import { deciderSpec } from '@tokenvault/cqrs/testing';
import { domainErrorWith } from '@tokenvault/platform/testing';
import type { TokenIntentEvent } from './tokens.events.ts';
import {
  intentDataForToken,
  intentKeySubject,
  intentTimesOf,
  intentOfKeySubject,
  tokenIntentDecider,
  type TokenIntentView,
} from './token-intent.ts';

const tenantId = '0b7a5c3e-1111-4a4a-9b9b-222222222222';
const actorId = '0b7a5c3e-3333-4a4a-9b9b-444444444444';
const intentId = '0b7a5c3e-5555-4a4a-9b9b-666666666666';
const intent: TokenIntentView = {
  id: intentId,
  tenant_id: tenantId,
  type: 'card',
  data_ciphertext: 'tk:sealed',
  fingerprint: 'fp',
  card: { bin: '42424242', last4: '4242', expiration_month: 12, expiration_year: 2040 },
  expires_at: '2026-01-02T00:00:00.000Z',
  created_by: actorId,
  created_at: '2026-01-01T00:00:00.000Z',
};
const before = '2026-01-01T12:00:00.000Z';
const after = '2026-01-02T00:00:00.000Z';
const { id: _id, ...intentData } = intent;
const created: TokenIntentEvent = {
  type: 'TokenIntentCreated',
  data: { intent_id: intentId, ...intentData },
};
const acting = (now: string) => ({ tenantId, intentId, actorId, now });
const converted: TokenIntentEvent = {
  type: 'TokenIntentConverted',
  data: {
    intent_id: intentId,
    tenant_id: tenantId,
    type: 'card',
    token_id: 'tok-1',
    converted_by: actorId,
    converted_at: before,
  },
};
const deleted: TokenIntentEvent = {
  type: 'TokenIntentDeleted',
  data: { intent_id: intentId, tenant_id: tenantId, type: 'card', deleted_by: actorId, deleted_at: before },
};
const expired: TokenIntentEvent = {
  type: 'TokenIntentExpired',
  data: { intent_id: intentId, tenant_id: tenantId, type: 'card', expired_at: after },
};
const spec = deciderSpec(tokenIntentDecider);

describe('token intent decider', () => {
  it('creates an intent once', () => {
    spec.given([]).when({ type: 'CreateTokenIntent', intent }).then([created]);
    spec
      .given([created])
      .when({ type: 'CreateTokenIntent', intent })
      .thenThrows(domainErrorWith('already-exists'));
  });

  it('converts a held intent once: a second conversion is a conflict', () => {
    spec
      .given([created])
      .when({ type: 'ConvertTokenIntent', tokenId: 'tok-1', ...acting(before) })
      .then([converted]);
    spec
      .given([created, converted])
      .when({ type: 'ConvertTokenIntent', tokenId: 'tok-2', ...acting(before) })
      .thenThrows(domainErrorWith('conflict'));
  });

  it('converts nothing that is absent, deleted, expired or past its expiry (404)', () => {
    const convert = { type: 'ConvertTokenIntent' as const, tokenId: 'tok-1', ...acting(before) };
    spec.given([]).when(convert).thenThrows(domainErrorWith('not-found'));
    spec.given([created, deleted]).when(convert).thenThrows(domainErrorWith('not-found'));
    spec.given([created, expired]).when(convert).thenThrows(domainErrorWith('not-found'));
    spec
      .given([created])
      .when({ ...convert, ...acting(after) })
      .thenThrows(domainErrorWith('not-found'));
  });

  it('deletes a held intent; a deleted, converted or expired one is a 404', () => {
    const remove = { type: 'DeleteTokenIntent' as const, ...acting(before) };
    spec.given([created]).when(remove).then([deleted]);
    for (const end of [deleted, converted, expired]) {
      spec.given([created, end]).when(remove).thenThrows(domainErrorWith('not-found'));
    }
    spec
      .given([created])
      .when({ ...remove, ...acting(after) })
      .thenThrows(domainErrorWith('not-found'));
  });

  it('expires a held intent past its expiry, and nothing else', () => {
    const expire = (now: string) => ({ type: 'ExpireTokenIntent' as const, tenantId, intentId, now });
    spec.given([created]).when(expire(after)).then([expired]);
    spec.given([created]).when(expire(before)).then([]);
    spec.given([created, converted]).when(expire(after)).then([]);
    spec.given([created, expired]).when(expire(after)).then([]);
    spec.given([]).when(expire(after)).then([]);
  });

  describe('the CVC’s retention', () => {
    const card = { number: '4242424242424242', expiration_month: 12, expiration_year: 2040, cvc: '123' };
    const { cvc: _cvc, ...withoutCvc } = card;
    const createdAt = new Date('2026-01-01T00:00:00.000Z');

    it('an intent holding a CVC expires with it, CARD_CVC_TTL_SECONDS after its creation; one without lives 24 hours', () => {
      expect(intentTimesOf('card', card, createdAt, 3600)).toEqual({
        expires_at: '2026-01-01T01:00:00.000Z',
        cvc_expires_at: '2026-01-01T01:00:00.000Z',
      });
      expect(intentTimesOf('card', withoutCvc, createdAt, 3600)).toEqual({
        expires_at: '2026-01-02T00:00:00.000Z',
      });
      expect(intentTimesOf('token', { cvc: '123' }, createdAt, 3600)).toEqual({
        expires_at: '2026-01-02T00:00:00.000Z',
      });
      // A retention longer than an intent's life: the intent still ends at 24 hours.
      expect(intentTimesOf('card', card, createdAt, 48 * 3600).expires_at).toBe('2026-01-02T00:00:00.000Z');
    });

    it('a token made of it gets the CVC’s time counted from the intent’s creation', () => {
      const holding = { ...intent, cvc_expires_at: '2026-01-01T01:00:00.000Z' };
      expect(intentDataForToken(holding, card, 3600, '2026-01-01T00:30:00.000Z')).toEqual({
        data: card,
        cvcExpiresAt: '2026-01-01T01:00:00.000Z',
      });
      expect(intentDataForToken(holding, withoutCvc, 3600, '2026-01-01T00:30:00.000Z')).toEqual({
        data: withoutCvc,
      });
    });

    it('an intent from before (no CVC time) past the CVC’s time hands its data without it', () => {
      expect(intentDataForToken(intent, card, 3600, '2026-01-01T01:00:00.000Z')).toEqual({
        data: withoutCvc,
      });
      expect(intentDataForToken(intent, card, 3600, '2026-01-01T00:59:59.999Z')).toEqual({
        data: card,
        cvcExpiresAt: '2026-01-01T01:00:00.000Z',
      });
    });
  });

  it('names its key so that no token id can take it (a token id has no slash)', () => {
    expect(intentKeySubject(intentId)).toContain('/');
    expect(intentOfKeySubject(intentKeySubject(intentId))).toBe(intentId);
    expect(intentOfKeySubject('tok-1')).toBeUndefined();
  });
});
