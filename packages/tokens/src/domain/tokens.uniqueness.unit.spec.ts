import { describe, expect, it } from 'vitest';
import { tokenClaims, tokenDataKey } from './tokens.uniqueness.ts';

const tenantId = '9d2f0a1e-0000-4000-8000-000000000001';
const token = {
  tenant_id: tenantId,
  token_id: 'a/b',
  type: 'card',
  containers: ['/pci/z/', '/pci/a/'],
  fingerprint: 'fp',
};

describe('token uniqueness claims', () => {
  it('keys a token’s data by tenant, type, containers in any order and fingerprint', () => {
    expect(tokenDataKey(token)).toBe(`${tenantId}:card:/pci/a/,/pci/z/:fp`);
    expect(tokenDataKey({ ...token, containers: ['/pci/a/', '/pci/z/'] })).toBe(tokenDataKey(token));
  });

  it('claims only for a deduplicated create; an update releases or moves; a delete releases', () => {
    const holder = `${tenantId}/a/b`;
    expect(tokenClaims({ type: 'TokenCreated', data: token })).toBeUndefined();
    expect(tokenClaims({ type: 'TokenCreated', data: { ...token, deduplicated: true } })).toEqual({
      claim: [{ scope: 'token-data', key: tokenDataKey(token), holder, tenant_id: tenantId }],
    });
    expect(tokenClaims({ type: 'TokenUpdated', data: token })).toBeUndefined();
    expect(tokenClaims({ type: 'TokenUpdated', data: { ...token, data_claim: 'released' } })).toEqual({
      releaseHeldBy: [{ scope: 'token-data', holder }],
    });
    expect(tokenClaims({ type: 'TokenUpdated', data: { ...token, data_claim: 'moved' } })).toEqual({
      releaseHeldBy: [{ scope: 'token-data', holder }],
      claim: [{ scope: 'token-data', key: tokenDataKey(token), holder, tenant_id: tenantId }],
    });
    expect(tokenClaims({ type: 'TokenDeleted', data: token })).toEqual({
      releaseHeldBy: [{ scope: 'token-data', holder }],
    });
    expect(tokenClaims({ type: 'TokenRead', data: token })).toBeUndefined();
  });
});
