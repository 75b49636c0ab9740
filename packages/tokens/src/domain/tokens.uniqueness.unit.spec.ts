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
      releaseHeldBy: [
        { scope: 'token-data', holder },
        { scope: 'token-search-index', holder },
      ],
    });
    expect(tokenClaims({ type: 'TokenRead', data: token })).toBeUndefined();
  });

  it('claims each value of a unique search index for the tenant; an update that changes them moves the claims', () => {
    const holder = `${tenantId}/a/b`;
    const indexClaim = (value: string) => ({
      scope: 'token-search-index',
      key: `${tenantId}:${value}`,
      holder,
      tenant_id: tenantId,
    });
    expect(
      tokenClaims({ type: 'TokenCreated', data: { ...token, unique_index_values: ['h1', 'h2'] } }),
    ).toEqual({ claim: [indexClaim('h1'), indexClaim('h2')] });
    expect(
      tokenClaims({
        type: 'TokenCreated',
        data: { ...token, deduplicated: true, unique_index_values: ['h1'] },
      }),
    ).toEqual({
      claim: [
        { scope: 'token-data', key: tokenDataKey(token), holder, tenant_id: tenantId },
        indexClaim('h1'),
      ],
    });
    // Values unchanged: nothing to move.
    expect(
      tokenClaims({ type: 'TokenUpdated', data: { ...token, unique_index_values: ['h1'] } }),
    ).toBeUndefined();
    expect(
      tokenClaims({
        type: 'TokenUpdated',
        data: { ...token, index_claims: true, unique_index_values: ['h3'] },
      }),
    ).toEqual({ releaseHeldBy: [{ scope: 'token-search-index', holder }], claim: [indexClaim('h3')] });
    expect(tokenClaims({ type: 'TokenUpdated', data: { ...token, index_claims: true } })).toEqual({
      releaseHeldBy: [{ scope: 'token-search-index', holder }],
    });
  });
});
