import { describe, expect, it } from 'vitest';
import { Problem } from '@tokenvault/platform';
import { deciderSpec } from '@tokenvault/cqrs/testing';
import { tokenDecider, type TokenEvent, type TokenView } from './token.ts';

const tenantId = '0b7a5c3e-1111-4a4a-9b9b-222222222222';
const actorId = '0b7a5c3e-3333-4a4a-9b9b-444444444444';
const token: TokenView = {
  id: 'tok-1',
  tenant_id: tenantId,
  type: 'card',
  data_ciphertext: 'v1.sealed',
  containers: ['/pci/high/'],
  metadata: { k: 'v' },
  fingerprint: 'fp',
  created_by: actorId,
  created_at: '2026-01-01T00:00:00.000Z',
};
const created: TokenEvent = { type: 'TokenCreated', data: { ...tokenWithoutId(), token_id: 'tok-1' } };
const deleted: TokenEvent = {
  type: 'TokenDeleted',
  data: {
    token_id: 'tok-1',
    tenant_id: tenantId,
    type: 'card',
    deleted_by: actorId,
    deleted_at: '2026-01-02T00:00:00.000Z',
  },
};
function tokenWithoutId() {
  const { id: _id, ...rest } = token;
  return rest;
}
const deleteCommand = (grants: {
  permissions: string[];
  rules?: { container: string; permissions: string[] }[];
}) => ({
  type: 'DeleteToken' as const,
  tokenId: 'tok-1',
  tenantId,
  grants: { permissions: grants.permissions, rules: grants.rules ?? [] },
  actorId,
  now: '2026-01-02T00:00:00.000Z',
});
const problem = (status: number) => (error: unknown) => error instanceof Problem && error.status === status;
const spec = deciderSpec(tokenDecider);

describe('token decider', () => {
  it('creates a token that does not exist', () => {
    spec.given([]).when({ type: 'CreateToken', token }).then([created]);
  });

  it('refuses an id already used, even by a deleted token', () => {
    spec.given([created]).when({ type: 'CreateToken', token }).thenThrows(problem(409));
    spec.given([created, deleted]).when({ type: 'CreateToken', token }).thenThrows(problem(409));
  });

  it('deletes a live token with token:delete on its containers', () => {
    spec
      .given([created])
      .when(deleteCommand({ permissions: ['token:delete'] }))
      .then([deleted]);
    spec
      .given([created])
      .when(
        deleteCommand({ permissions: [], rules: [{ container: '/pci/', permissions: ['token:delete'] }] }),
      )
      .then([deleted]);
  });

  it('refuses a delete without the permission on the token’s containers', () => {
    spec
      .given([created])
      .when(
        deleteCommand({ permissions: [], rules: [{ container: '/bank/', permissions: ['token:delete'] }] }),
      )
      .thenThrows(problem(403));
  });

  it('answers 404 for a token that is absent or already deleted', () => {
    spec
      .given([])
      .when(deleteCommand({ permissions: ['token:delete'] }))
      .thenThrows(problem(404));
    spec
      .given([created, deleted])
      .when(deleteCommand({ permissions: ['token:delete'] }))
      .thenThrows(problem(404));
  });

  it('folds events into the decided state', () => {
    expect(tokenDecider.evolve(tokenDecider.initialState(), created)).toEqual({ status: 'live', token });
  });
});
