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
    parent_ids: [],
    child_ids: ['child-9'],
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
  childIds: ['child-9'],
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
    expect(tokenDecider.evolve(tokenDecider.initialState(), created)).toEqual({
      status: 'live',
      token,
      parents: [],
    });
  });
});

describe('token associations (kept in the child’s stream)', () => {
  const acting = {
    tenantId,
    grants: { permissions: [], rules: [] },
    actorId,
    now: '2026-01-03T00:00:00.000Z',
  };
  const associate = (parentId: string) => ({
    type: 'AssociateParent' as const,
    tokenId: 'tok-1',
    parentId,
    ...acting,
  });
  const dissociate = (parentId: string) => ({
    type: 'DissociateParent' as const,
    tokenId: 'tok-1',
    parentId,
    ...acting,
  });
  const associated = (parentId: string): TokenEvent => ({
    type: 'TokenAssociated',
    data: {
      tenant_id: tenantId,
      parent_id: parentId,
      child_id: 'tok-1',
      type: 'card',
      containers: ['/pci/high/'],
      associated_by: actorId,
      associated_at: acting.now,
    },
  });
  const dissociated = (parentId: string): TokenEvent => ({
    type: 'TokenDissociated',
    data: {
      tenant_id: tenantId,
      parent_id: parentId,
      child_id: 'tok-1',
      type: 'card',
      dissociated_by: actorId,
      dissociated_at: acting.now,
    },
  });

  it('associates a parent once; again is a success with no event', () => {
    spec
      .given([created])
      .when(associate('p'))
      .then([associated('p')]);
    spec
      .given([created, associated('p')])
      .when(associate('p'))
      .then([]);
  });

  it('knows the parent a child was created under', () => {
    const createdAsChild: TokenEvent = {
      type: 'TokenCreated',
      data: { ...created.data, parent_id: 'p' } as never,
    };
    spec.given([createdAsChild]).when(associate('p')).then([]);
    spec
      .given([createdAsChild])
      .when(dissociate('p'))
      .then([dissociated('p')]);
  });

  it('refuses a token as its own child, and a dissociation that is not there', () => {
    spec.given([created]).when(associate('tok-1')).thenThrows(problem(400));
    spec.given([created]).when(dissociate('p')).thenThrows(problem(404));
    spec
      .given([created, associated('p'), dissociated('p')])
      .when(dissociate('p'))
      .thenThrows(problem(404));
  });

  it('re-associates after a dissociation, and a deleted token takes none', () => {
    spec
      .given([created, associated('p'), dissociated('p')])
      .when(associate('p'))
      .then([associated('p')]);
    spec.given([created, deleted]).when(associate('p')).thenThrows(problem(404));
  });

  it('a deletion records the associations it ends', () => {
    spec
      .given([created, associated('p'), associated('q'), dissociated('p')])
      .when(deleteCommand({ permissions: ['token:delete'] }))
      .then([{ ...deleted, data: { ...deleted.data, parent_ids: ['q'] } } as TokenEvent]);
  });
});
