import { describe, expect, it } from 'vitest';
import { deciderSpec } from '@tokenvault/cqrs/testing';
import { mergePatch } from './merge-patch.ts';
import type { DerivedFromData, TokenEvent, TokenUpdate } from './tokens.events.ts';
import { tokenDecider, type RecomputedFromData, type TokenPatch, type TokenView } from './token.ts';
import { domainErrorWith } from '@tokenvault/platform/testing';

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
const spec = deciderSpec(tokenDecider);

describe('token decider', () => {
  it('creates a token that does not exist', () => {
    spec.given([]).when({ type: 'CreateToken', token }).then([created]);
  });

  it('refuses an id already used, even by a deleted token', () => {
    spec.given([created]).when({ type: 'CreateToken', token }).thenThrows(domainErrorWith('already-exists'));
    spec
      .given([created, deleted])
      .when({ type: 'CreateToken', token })
      .thenThrows(domainErrorWith('already-exists'));
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
      .thenThrows(domainErrorWith('not-allowed'));
  });

  it('refuses (not found) a token that is absent or already deleted', () => {
    spec
      .given([])
      .when(deleteCommand({ permissions: ['token:delete'] }))
      .thenThrows(domainErrorWith('not-found'));
    spec
      .given([created, deleted])
      .when(deleteCommand({ permissions: ['token:delete'] }))
      .thenThrows(domainErrorWith('not-found'));
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
      data: { ...created.data, parent_id: 'p' },
    };
    spec.given([createdAsChild]).when(associate('p')).then([]);
    spec
      .given([createdAsChild])
      .when(dissociate('p'))
      .then([dissociated('p')]);
  });

  it('refuses a token as its own child, and a dissociation that is not there', () => {
    spec.given([created]).when(associate('tok-1')).thenThrows(domainErrorWith('invalid'));
    spec.given([created]).when(dissociate('p')).thenThrows(domainErrorWith('not-found'));
    spec
      .given([created, associated('p'), dissociated('p')])
      .when(dissociate('p'))
      .thenThrows(domainErrorWith('not-found'));
  });

  it('re-associates after a dissociation, and a deleted token takes none', () => {
    spec
      .given([created, associated('p'), dissociated('p')])
      .when(associate('p'))
      .then([associated('p')]);
    spec.given([created, deleted]).when(associate('p')).thenThrows(domainErrorWith('not-found'));
  });

  it('a deletion records the associations it ends', () => {
    spec
      .given([created, associated('p'), associated('q'), dissociated('p')])
      .when(deleteCommand({ permissions: ['token:delete'] }))
      .then([{ ...deleted, data: { ...deleted.data, parent_ids: ['q'] } }]);
  });
});

describe('token updates (merge patches prepared by the command side)', () => {
  const now = '2026-01-04T00:00:00.000Z';
  const update = (
    patch: TokenPatch,
    grants: { permissions: string[]; rules?: { container: string; permissions: string[] }[] } = {
      permissions: ['token:update'],
    },
  ) => ({
    type: 'UpdateToken' as const,
    tokenId: 'tok-1',
    patch,
    tenantId,
    grants: { permissions: grants.permissions, rules: grants.rules ?? [] },
    actorId,
    now,
  });
  const updated = (changes: Partial<TokenUpdate>): TokenEvent => ({
    type: 'TokenUpdated',
    data: {
      token_id: 'tok-1',
      tenant_id: tenantId,
      type: 'card',
      data_ciphertext: 'v1.sealed',
      fingerprint: 'fp',
      containers: ['/pci/high/'],
      metadata: { k: 'v' },
      modified_by: actorId,
      modified_at: now,
      // The token's creation time, which an update never changes (for the monthly active tokens).
      created_at: token.created_at,
      ...changes,
    },
  });
  // Expressions on the data (indexes, fingerprint, mask) are set by a key that may reveal it.
  const updateRevealing = (patch: TokenPatch) =>
    update(patch, { permissions: ['token:update', 'token:read'] });
  const newData = {
    basis: 'v1.sealed',
    changed: true,
    data_ciphertext: 'v1.sealed-again',
    fingerprint: 'fp2',
  };

  it('records new search indexes and their values; only a change of unique values moves the claims', () => {
    const plain = { search_indexes: [{ expression: '{{ data | last4 }}' }], search_index_values: ['h1'] };
    const unique = {
      search_indexes: [{ expression: '{{ data }}', unique: true as const }],
      search_index_values: ['h2'],
      unique_index_values: ['h2'],
    };
    const sameData = { basis: 'v1.sealed', changed: false, data_ciphertext: 'v1.sealed', fingerprint: 'fp' };
    spec
      .given([created])
      .when(updateRevealing({ data: sameData, search: plain }))
      .then([updated(plain)]);
    spec
      .given([created])
      .when(updateRevealing({ data: sameData, search: unique }))
      .then([updated({ ...unique, index_claims: true })]);
    // The same indexes and values again: nothing to record.
    spec
      .given([created, updated({ ...unique, index_claims: true })])
      .when(updateRevealing({ data: sameData, search: unique }))
      .then([]);
    // Removed: the token gives its unique values up.
    spec
      .given([created, updated({ ...unique, index_claims: true })])
      .when(updateRevealing({ data: sameData, search: {} }))
      .then([updated({ index_claims: true })]);
    // A new fingerprint expression changes the fingerprint of the same data.
    spec
      .given([created])
      .when(
        updateRevealing({
          data: { ...sameData, fingerprint: 'fp-expr' },
          search: { fingerprint_expression: '{{ data }}' },
        }),
      )
      .then([
        updated({ fingerprint: 'fp-expr', fingerprint_expression: '{{ data }}', data_claim: 'released' }),
      ]);
  });

  it('merges metadata (null removes a key), replaces containers and sets the expiry', () => {
    spec
      .given([created])
      .when(
        updateRevealing({
          metadata: { k: null, added: 'yes' },
          containers: ['/pci/low/', '/pci/low/'],
          expires_at: '2030-01-01T00:00:00Z',
        }),
      )
      .then([
        updated({
          metadata: { added: 'yes' },
          containers: ['/pci/low/'],
          expires_at: '2030-01-01T00:00:00.000Z',
          data_claim: 'released',
        }),
      ]);
    spec
      .given([created])
      .when(updateRevealing({ metadata: null }))
      .then([updated({ metadata: {} })]);
  });

  it('given a token, when a patch gives a mask, then the update carries it; later updates keep it; the same mask again changes nothing', () => {
    const mask = { number: '{{ data.number | reveal_last: 4 }}' };
    spec
      .given([created])
      .when(updateRevealing({ mask }))
      .then([updated({ mask })]);
    spec
      .given([created, updated({ mask })])
      .when(updateRevealing({ metadata: { k: 'w' } }))
      .then([updated({ mask, metadata: { k: 'w' } })]);
    spec
      .given([created, updated({ mask })])
      .when(updateRevealing({ mask }))
      .then([]);
  });

  it('given a token with its own mask, when a patch gives mask null, then the update carries none (its type’s default)', () => {
    const mask = { number: '{{ data.number | reveal_first: 6 }}' };
    spec
      .given([created, updated({ mask })])
      .when(updateRevealing({ mask: null }))
      .then([updated({})]);
    spec
      .given([created])
      .when(updateRevealing({ mask: null }))
      .then([]);
  });

  it('given a key whose rules do not reveal the token, when a patch sets its mask or expressions, then it is refused (403); the same expressions again over new data go through', () => {
    const mask = { number: '{{ data.number | reveal_last: 4 }}' };
    const indexes = { search_indexes: [{ expression: '{{ data.number }}' }], search_index_values: ['h1'] };
    const updateOnly = { permissions: [], rules: [{ container: '/pci/', permissions: ['token:update'] }] };
    const masking = {
      permissions: [],
      rules: [{ container: '/pci/', transform: 'mask', permissions: ['token:read', 'token:update'] }],
    };
    for (const grants of [updateOnly, masking, { permissions: ['token:update'] }]) {
      for (const patch of [
        { mask },
        { mask: null },
        { data: newData, search: indexes },
        { data: newData, search: { fingerprint_expression: '{{ data.number }}' } },
      ]) {
        spec.given([created]).when(update(patch, grants)).thenThrows(domainErrorWith('not-allowed'));
      }
    }
    spec
      .given([created, updated(indexes)])
      .when(update({ data: newData, search: indexes }, updateOnly))
      .then([
        updated({
          ...indexes,
          data_ciphertext: 'v1.sealed-again',
          fingerprint: 'fp2',
          data_claim: 'released',
        }),
      ]);
  });

  it('given a card, when a patch changes its restriction policy, then the update carries the whole privacy; the same again changes nothing', () => {
    const redacting = { classification: 'pci', impact_level: 'high', restriction_policy: 'redact' } as const;
    spec
      .given([created])
      .when(updateRevealing({ privacy: { restriction_policy: 'redact' } }))
      .then([updated({ privacy: redacting })]);
    spec
      .given([created, updated({ privacy: redacting })])
      .when(updateRevealing({ privacy: { classification: 'pci', restriction_policy: 'redact' } }))
      .then([]);
  });

  it('refuses a card’s impact level below high and another classification, naming the field', () => {
    spec
      .given([created])
      .when(updateRevealing({ privacy: { impact_level: 'low' } }))
      .thenThrows(domainErrorWith('invalid', { field: 'body.privacy.impact_level' }));
    spec
      .given([created])
      .when(updateRevealing({ privacy: { classification: 'general' } }))
      .thenThrows(domainErrorWith('invalid', { field: 'body.privacy.classification' }));
  });

  it('given a general token, when a patch lowers its impact level, then it moves from /general/high/ to /general/low/ only with token:update on both', () => {
    const general: TokenEvent = {
      type: 'TokenCreated',
      data: {
        ...tokenWithoutId(),
        token_id: 'tok-1',
        type: 'token',
        containers: ['/general/high/', '/general/high/orders/', '/teams/a/'],
        privacy: { classification: 'general', impact_level: 'high', restriction_policy: 'redact' },
      },
    };
    const onGeneral = {
      permissions: [],
      rules: [{ container: '/', permissions: ['token:update', 'token:read'] }],
    };
    spec
      .given([general])
      .when(update({ privacy: { impact_level: 'low' } }, onGeneral))
      .then([
        updated({
          type: 'token',
          containers: ['/general/low/', '/general/low/orders/', '/teams/a/'],
          privacy: { classification: 'general', impact_level: 'low', restriction_policy: 'redact' },
          data_claim: 'released',
        }),
      ]);
    // Given containers win over the privacy's.
    spec
      .given([general])
      .when(update({ privacy: { impact_level: 'low' }, containers: ['/teams/a/'] }, onGeneral))
      .then([
        updated({
          type: 'token',
          containers: ['/teams/a/'],
          privacy: { classification: 'general', impact_level: 'low', restriction_policy: 'redact' },
          data_claim: 'released',
        }),
      ]);
    // A key that may not update /general/low/ cannot move the token there by its privacy.
    const onHigh = {
      permissions: [],
      rules: [
        { container: '/general/high/', permissions: ['token:update', 'token:read'] },
        { container: '/teams/', permissions: ['token:update', 'token:read'] },
      ],
    };
    spec
      .given([general])
      .when(update({ privacy: { impact_level: 'low' } }, onHigh))
      .thenThrows(domainErrorWith('not-allowed'));
  });

  it('takes the sealed data it was prepared with, and removes an expiry with null', () => {
    const expiring = updated({ expires_at: '2030-01-01T00:00:00.000Z' });
    spec
      .given([created, expiring])
      .when(update({ data: newData, expires_at: null }))
      .then([updated({ data_ciphertext: 'v1.sealed-again', fingerprint: 'fp2', data_claim: 'released' })]);
  });

  it('gives up its claim on the old data when data or containers change, and moves it when deduplicating', () => {
    spec
      .given([created])
      .when({ ...update({ data: newData }), deduplicate: true })
      .then([updated({ data_ciphertext: 'v1.sealed-again', fingerprint: 'fp2', data_claim: 'moved' })]);
    // Metadata or expiry alone keep the data and its claim as they are.
    spec
      .given([created])
      .when({ ...update({ metadata: { k: 'w' } }), deduplicate: true })
      .then([updated({ metadata: { k: 'w' } })]);
  });

  it('appends nothing for a patch that changes nothing', () => {
    spec.given([created]).when(update({})).then([]);
    spec
      .given([created])
      .when(update({ metadata: { k: 'v' }, containers: ['/pci/high/'] }))
      .then([]);
    // Equal data (the command side found the merged value unchanged): the token keeps its
    // ciphertext, and nothing changed.
    spec
      .given([created])
      .when(update({ data: { ...newData, changed: false, fingerprint: 'fp' } }))
      .then([]);
  });

  it('refuses an invalid update and decides nothing', () => {
    const tooMany = Object.fromEntries(Array.from({ length: 50 }, (_, index) => [`key-${index}`, 'x']));
    spec
      .given([created])
      .when(update({ metadata: tooMany }))
      .thenThrows(domainErrorWith('invalid'));
    // Data merged into a ciphertext the token no longer holds: another update came in between.
    spec
      .given([created, updated({ data_ciphertext: 'v1.other', fingerprint: 'fp3' })])
      .when(update({ data: newData }))
      .thenThrows(domainErrorWith('conflict'));
  });

  it('needs token:update on every container before and after', () => {
    const onPci = {
      permissions: [],
      rules: [{ container: '/pci/', permissions: ['token:update', 'token:read'] }],
    };
    spec
      .given([created])
      .when(update({ containers: ['/pci/low/'] }, onPci))
      .then([updated({ containers: ['/pci/low/'], data_claim: 'released' })]);
    spec
      .given([created])
      .when(update({ containers: ['/pci/low/', '/general/'] }, onPci))
      .thenThrows(domainErrorWith('not-allowed'));
    spec
      .given([created])
      .when(
        update(
          { metadata: { a: 'b' } },
          { permissions: [], rules: [{ container: '/bank/', permissions: ['token:update'] }] },
        ),
      )
      .thenThrows(domainErrorWith('not-allowed'));
    spec
      .given([created])
      .when(update({ metadata: { a: 'b' } }, { permissions: ['token:read', 'token:create'] }))
      .thenThrows(domainErrorWith('not-allowed'));
  });

  it('given a key its rules do not reveal the token to everywhere, when a patch changes the containers or the privacy, then it is refused (403 naming the field) before anything else', () => {
    const general: TokenEvent = {
      type: 'TokenCreated',
      data: {
        ...tokenWithoutId(),
        type: 'token',
        token_id: 'tok-1',
        containers: ['/pii/high/'],
        privacy: { classification: 'pii', impact_level: 'high', restriction_policy: 'redact' },
      },
    };
    type Rule = {
      container: string;
      permissions: string[];
      transform?: 'reveal' | 'mask' | 'redact';
      priority?: number;
    };
    const keyWith = (...rules: Rule[]) => ({ permissions: [], rules });
    const updateOnly = keyWith({ container: '/', permissions: ['token:update'] });
    const maskedWhereItIs = keyWith(
      { container: '/pii/', permissions: ['token:update', 'token:read'], transform: 'mask', priority: 1 },
      { container: '/general/', permissions: ['token:update', 'token:read'], priority: 2 },
    );
    const revealsOnlyWhereItGoes = keyWith(
      { container: '/general/', permissions: ['token:update', 'token:read'], priority: 1 },
      { container: '/pii/', permissions: ['token:update'], priority: 2 },
    );
    const revealsWhereItIsOnly = keyWith(
      { container: '/pii/', permissions: ['token:update', 'token:read'] },
      { container: '/general/', permissions: ['token:update'] },
    );
    for (const grants of [updateOnly, maskedWhereItIs, revealsOnlyWhereItGoes, revealsWhereItIsOnly]) {
      spec
        .given([general])
        .when(update({ containers: ['/general/x/'] }, grants))
        .thenThrows(domainErrorWith('not-allowed', { field: 'body.containers' }));
      spec
        .given([general])
        .when(update({ containers: ['/pii/high/', '/general/x/'] }, grants))
        .thenThrows(domainErrorWith('not-allowed', { field: 'body.containers' }));
    }
    for (const grants of [updateOnly, maskedWhereItIs, revealsOnlyWhereItGoes]) {
      for (const privacy of [
        { restriction_policy: 'mask' },
        { impact_level: 'moderate' },
        // Checked before the privacy is: the 403 comes first, whatever else is wrong.
        { classification: 'general' },
      ] as const) {
        spec
          .given([general])
          .when(update({ privacy }, grants))
          .thenThrows(domainErrorWith('not-allowed', { field: 'body.privacy' }));
      }
    }
    // The same containers and privacy sent back change nothing: no reveal needed.
    spec
      .given([general])
      .when(
        update(
          {
            containers: ['/pii/high/', '/pii/high/'],
            privacy: { classification: 'pii', impact_level: 'high', restriction_policy: 'redact' },
            metadata: { k: 'w' },
          },
          updateOnly,
        ),
      )
      .then([updated({ type: 'token', containers: ['/pii/high/'], metadata: { k: 'w' } })]);
    // A key that reveals it where it is and where it goes moves it.
    const revealing = keyWith({ container: '/', permissions: ['token:update', 'token:read'] });
    spec
      .given([general])
      .when(update({ containers: ['/general/x/'], privacy: { restriction_policy: 'mask' } }, revealing))
      .then([
        updated({
          type: 'token',
          containers: ['/general/x/'],
          privacy: { classification: 'pii', impact_level: 'high', restriction_policy: 'mask' },
          data_claim: 'released',
        }),
      ]);
  });

  it('refuses (not found) a token that is absent, deleted or expired', () => {
    spec
      .given([])
      .when(update({ metadata: { a: 'b' } }))
      .thenThrows(domainErrorWith('not-found'));
    spec
      .given([created, deleted])
      .when(update({ metadata: { a: 'b' } }))
      .thenThrows(domainErrorWith('not-found'));
    spec
      .given([created, updated({ expires_at: '2026-01-03T00:00:00.000Z' })])
      .when(update({ metadata: { a: 'b' } }))
      .thenThrows(domainErrorWith('not-found'));
  });

  it('folds an update into the state, which later associations carry', () => {
    const state = [
      created,
      updated({ containers: ['/pci/low/'], metadata: {}, expires_at: '2030-01-01T00:00:00.000Z' }),
    ].reduce((folded, event) => tokenDecider.evolve(folded, event), tokenDecider.initialState());
    expect(state).toEqual({
      status: 'live',
      parents: [],
      token: {
        ...token,
        containers: ['/pci/low/'],
        metadata: {},
        expires_at: '2030-01-01T00:00:00.000Z',
        modified_by: actorId,
        modified_at: now,
      },
    });
  });
});

describe('privacy, summaries and the CVC’s time', () => {
  const cardSummary = {
    bin: '42424242',
    last4: '4242',
    brand: 'visa' as const,
    expiration_month: 12,
    expiration_year: 2030,
  };
  const withCvc: TokenView = {
    ...token,
    privacy: { classification: 'pci', impact_level: 'high', restriction_policy: 'mask' },
    card: cardSummary,
    cvc_expires_at: '2026-01-01T01:00:00.000Z',
  };
  // Nothing derived from the CVC: the recomputed values are the token's own.
  const unchanged: RecomputedFromData = { fingerprint: 'fp', card: cardSummary };
  const removeCvc = (now: string, basis = 'v1.sealed', derived: RecomputedFromData = unchanged) => ({
    type: 'RemoveCvc' as const,
    tenantId,
    tokenId: 'tok-1',
    basis,
    data_ciphertext: 'v1.without-cvc',
    derived,
    now,
  });
  const cvcRemoved = (now: string, derived: DerivedFromData | null = unchanged): TokenEvent => ({
    type: 'TokenCvcRemoved',
    data: {
      token_id: 'tok-1',
      tenant_id: tenantId,
      type: 'card',
      data_ciphertext: 'v1.without-cvc',
      removed_at: now,
      ...(derived ? { derived } : {}),
    },
  });

  it('records the privacy, the card summary and the CVC’s time with the token', () => {
    const [event] = tokenDecider.decide({ type: 'CreateToken', token: withCvc }, tokenDecider.initialState());
    expect(event).toEqual({
      type: 'TokenCreated',
      data: {
        ...tokenWithoutId(),
        token_id: 'tok-1',
        privacy: withCvc.privacy,
        card: cardSummary,
        cvc_expires_at: '2026-01-01T01:00:00.000Z',
      },
    });
  });

  it('removes the CVC once its time has come, and nothing before', () => {
    const [event] = tokenDecider.decide({ type: 'CreateToken', token: withCvc }, tokenDecider.initialState());
    spec
      .given([event!])
      .when(removeCvc('2026-01-01T01:00:00.000Z'))
      .then([cvcRemoved('2026-01-01T01:00:00.000Z')]);
    spec.given([event!]).when(removeCvc('2026-01-01T00:59:59.999Z')).then([]);
  });

  it('removes it once: a retried removal, or one of a token without a CVC, appends nothing', () => {
    const [event] = tokenDecider.decide({ type: 'CreateToken', token: withCvc }, tokenDecider.initialState());
    const later = '2026-01-01T02:00:00.000Z';
    spec
      .given([event!, cvcRemoved(later)])
      .when(removeCvc(later, 'v1.without-cvc'))
      .then([]);
    spec.given([created]).when(removeCvc(later)).then([]);
  });

  it('refuses a removal from data the token no longer holds, and one of a deleted token', () => {
    const [event] = tokenDecider.decide({ type: 'CreateToken', token: withCvc }, tokenDecider.initialState());
    const later = '2026-01-01T02:00:00.000Z';
    spec.given([event!]).when(removeCvc(later, 'v1.older')).thenThrows(domainErrorWith('conflict'));
    spec.given([event!, deleted]).when(removeCvc(later)).thenThrows(domainErrorWith('not-found'));
  });

  describe('what was derived from the CVC goes with it', () => {
    const cvcIndex = { expression: '{{ data.cvc }}', unique: true as const };
    const indexedByCvc: TokenView = {
      ...withCvc,
      fingerprint: 'fp-of-cvc',
      fingerprint_expression: '{{ data.cvc }}',
      search_indexes: [cvcIndex, { expression: '{{ data.number | last4 }}' }],
      search_index_values: ['hmac-of-cvc', 'hmac-of-last4'],
      unique_index_values: ['hmac-of-cvc'],
    };
    const later = '2026-01-01T02:00:00.000Z';
    const givenIndexed = () =>
      tokenDecider.decide({ type: 'CreateToken', token: indexedByCvc }, tokenDecider.initialState());
    // As the command side recomputes it without the CVC: the CVC index gives nothing, the
    // fingerprint expression is gone and the number's fingerprint takes its place.
    const recomputed: RecomputedFromData = {
      fingerprint: 'fp-of-number',
      card: cardSummary,
      search_indexes: indexedByCvc.search_indexes!,
      search_index_values: ['hmac-of-last4'],
    };

    it('records the recomputed values, gives up the old fingerprint’s claim and the CVC’s unique claim', () => {
      spec
        .given(givenIndexed())
        .when(removeCvc(later, 'v1.sealed', recomputed))
        .then([cvcRemoved(later, { ...recomputed, data_claim: 'released', index_claims: true })]);
    });

    it('claims nothing and releases nothing when the recomputed values are the token’s', () => {
      const same: RecomputedFromData = {
        fingerprint: 'fp-of-cvc',
        card: cardSummary,
        fingerprint_expression: '{{ data.cvc }}',
        search_indexes: indexedByCvc.search_indexes!,
        search_index_values: ['hmac-of-cvc', 'hmac-of-last4'],
        unique_index_values: ['hmac-of-cvc'],
      };
      spec
        .given(givenIndexed())
        .when(removeCvc(later, 'v1.sealed', same))
        .then([cvcRemoved(later, same)]);
    });

    it('folds them into the state: what the event leaves out, the token no longer has', () => {
      const state = [
        ...givenIndexed(),
        cvcRemoved(later, { ...recomputed, data_claim: 'released', index_claims: true }),
      ].reduce((folded, next) => tokenDecider.evolve(folded, next), tokenDecider.initialState());
      const {
        cvc_expires_at: _gone,
        fingerprint_expression: _expression,
        unique_index_values: _unique,
        ...rest
      } = indexedByCvc;
      expect(state).toEqual({
        status: 'live',
        parents: [],
        token: {
          ...rest,
          fingerprint: 'fp-of-number',
          search_index_values: ['hmac-of-last4'],
          data_ciphertext: 'v1.without-cvc',
        },
      });
    });

    it('an event from before `derived` changes the ciphertext only', () => {
      const state = [...givenIndexed(), cvcRemoved(later, null)].reduce(
        (folded, next) => tokenDecider.evolve(folded, next),
        tokenDecider.initialState(),
      );
      const { cvc_expires_at: _gone, ...rest } = indexedByCvc;
      expect(state).toEqual({
        status: 'live',
        parents: [],
        token: { ...rest, data_ciphertext: 'v1.without-cvc' },
      });
    });
  });

  it('folds the removal into the state: the new ciphertext, no CVC time, the rest unchanged', () => {
    const [event] = tokenDecider.decide({ type: 'CreateToken', token: withCvc }, tokenDecider.initialState());
    const state = [event!, cvcRemoved('2026-01-01T02:00:00.000Z')].reduce(
      (folded, next) => tokenDecider.evolve(folded, next),
      tokenDecider.initialState(),
    );
    const { cvc_expires_at: _gone, ...rest } = withCvc;
    expect(state).toEqual({
      status: 'live',
      parents: [],
      token: { ...rest, data_ciphertext: 'v1.without-cvc' },
    });
  });

  it('an update of the data carries its new summaries and CVC time; equal data keeps them', () => {
    const [event] = tokenDecider.decide({ type: 'CreateToken', token: withCvc }, tokenDecider.initialState());
    const acting = {
      tenantId,
      grants: { permissions: ['token:update'], rules: [] },
      actorId,
      now: '2026-01-01T00:30:00.000Z',
    };
    const renewed = { ...cardSummary, expiration_year: 2031 };
    const [changed] = tokenDecider.decide(
      {
        type: 'UpdateToken',
        tokenId: 'tok-1',
        patch: {
          data: {
            basis: 'v1.sealed',
            changed: true,
            data_ciphertext: 'v1.new',
            fingerprint: 'fp',
            card: renewed,
            cvc_expires_at: '2026-01-01T01:30:00.000Z',
          },
        },
        ...acting,
      },
      tokenDecider.evolve(tokenDecider.initialState(), event!),
    );
    expect(changed!.data).toMatchObject({ card: renewed, cvc_expires_at: '2026-01-01T01:30:00.000Z' });
    // Same fingerprint (the number): the claim on the data stays where it is.
    expect(changed!.data).not.toHaveProperty('data_claim');
    // Metadata alone: the summaries and the CVC's time go on as they were.
    const [metadataOnly] = tokenDecider.decide(
      { type: 'UpdateToken', tokenId: 'tok-1', patch: { metadata: { k: 'w' } }, ...acting },
      tokenDecider.evolve(tokenDecider.initialState(), event!),
    );
    expect(metadataOnly!.data).toMatchObject({
      card: cardSummary,
      cvc_expires_at: '2026-01-01T01:00:00.000Z',
    });
    // The data without its CVC: the event says so by leaving the time out, and the state forgets it.
    const [noCvc] = tokenDecider.decide(
      {
        type: 'UpdateToken',
        tokenId: 'tok-1',
        patch: {
          data: {
            basis: 'v1.sealed',
            changed: true,
            data_ciphertext: 'v1.no-cvc',
            fingerprint: 'fp',
            card: cardSummary,
          },
        },
        ...acting,
      },
      tokenDecider.evolve(tokenDecider.initialState(), event!),
    );
    expect(noCvc!.data).not.toHaveProperty('cvc_expires_at');
    const folded = [event!, noCvc!].reduce(
      (state, next) => tokenDecider.evolve(state, next),
      tokenDecider.initialState(),
    );
    expect(folded.status === 'live' && 'cvc_expires_at' in folded.token).toBe(false);
  });
});

describe('mergePatch (RFC 7396)', () => {
  it('follows the examples of RFC 7396, appendix A', () => {
    const cases: [unknown, unknown, unknown][] = [
      [{ a: 'b' }, { a: 'c' }, { a: 'c' }],
      [{ a: 'b' }, { b: 'c' }, { a: 'b', b: 'c' }],
      [{ a: 'b' }, { a: null }, {}],
      [{ a: 'b', b: 'c' }, { a: null }, { b: 'c' }],
      [{ a: ['b'] }, { a: 'c' }, { a: 'c' }],
      [{ a: 'c' }, { a: ['b'] }, { a: ['b'] }],
      [{ a: { b: 'c' } }, { a: { b: 'd', c: null } }, { a: { b: 'd' } }],
      [{ a: [{ b: 'c' }] }, { a: [1] }, { a: [1] }],
      [
        ['a', 'b'],
        ['c', 'd'],
        ['c', 'd'],
      ],
      [{ a: 'b' }, ['c'], ['c']],
      [{ e: null }, { a: 1 }, { e: null, a: 1 }],
      [[1, 2], { a: 'b', c: null }, { a: 'b' }],
      [{}, { a: { bb: { ccc: null } } }, { a: { bb: {} } }],
      ['text', 'other', 'other'],
    ];
    for (const [target, patch, result] of cases) expect(mergePatch(target, patch)).toEqual(result);
  });

  it('leaves the target as it was, and keeps a key named __proto__ as data', () => {
    const target = { a: { b: 1 } };
    const merged = mergePatch(target, JSON.parse('{"a":{"c":2},"__proto__":{"x":1}}'));
    expect(target).toEqual({ a: { b: 1 } });
    expect(JSON.stringify(merged)).toBe('{"a":{"b":1,"c":2},"__proto__":{"x":1}}');
    expect(Object.getPrototypeOf(merged)).toBe(Object.prototype);
  });
});
