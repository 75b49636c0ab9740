import { randomUUID } from 'node:crypto';
import { describe, expect, it } from 'vitest';
import { TokenQueries, type TokenRow } from '../queries/tokens.queries.ts';
import { type Pool, type PoolClient } from '@tokenvault/platform';
import type { DataOf } from '@tokenvault/cqrs';
import { projectionSpec, recordedEvent, useTestPool } from '@tokenvault/cqrs/testing';
import { vaultMigrations } from '@tokenvault/vault';
import { tokensMigrations } from '../migrations.ts';
import { tokenStream, type TokenEvent } from '../domain/tokens.events.ts';
import { tokensProjection } from './tokens.projection.ts';

const tenant = randomUUID();
const otherTenant = randomUUID();
const actor = randomUUID();

const created = (tokenId: string, fields: Partial<DataOf<TokenEvent, 'TokenCreated'>> = {}) => {
  const data: DataOf<TokenEvent, 'TokenCreated'> = {
    token_id: tokenId,
    tenant_id: tenant,
    type: 'token',
    data_ciphertext: `sealed-${tokenId}`,
    containers: ['/general/'],
    metadata: {},
    fingerprint: `fp-${tokenId}`,
    created_by: actor,
    created_at: '2026-01-10T10:00:00.000Z',
    ...fields,
  };
  return recordedEvent('TokenCreated', data, { stream: tokenStream(data.tenant_id, tokenId) });
};

const updated = (tokenId: string, fields: Partial<DataOf<TokenEvent, 'TokenUpdated'>> = {}) => {
  const data: DataOf<TokenEvent, 'TokenUpdated'> = {
    token_id: tokenId,
    tenant_id: tenant,
    type: 'token',
    data_ciphertext: `sealed-again-${tokenId}`,
    fingerprint: `fp-again-${tokenId}`,
    containers: ['/general/'],
    metadata: {},
    modified_by: actor,
    modified_at: '2026-01-11T10:00:00.000Z',
    ...fields,
  };
  return recordedEvent('TokenUpdated', data, { stream: tokenStream(data.tenant_id, tokenId) });
};

const associated = (
  parentId: string,
  childId: string,
  fields: Partial<DataOf<TokenEvent, 'TokenAssociated'>> = {},
) => {
  const data: DataOf<TokenEvent, 'TokenAssociated'> = {
    tenant_id: tenant,
    parent_id: parentId,
    child_id: childId,
    type: 'token',
    containers: ['/general/'],
    associated_by: actor,
    associated_at: '2026-01-12T10:00:00.000Z',
    ...fields,
  };
  return recordedEvent('TokenAssociated', data, { stream: tokenStream(data.tenant_id, childId) });
};

const dissociated = (parentId: string, childId: string) => {
  const data: DataOf<TokenEvent, 'TokenDissociated'> = {
    tenant_id: tenant,
    parent_id: parentId,
    child_id: childId,
    type: 'token',
    dissociated_by: actor,
    dissociated_at: '2026-01-13T10:00:00.000Z',
  };
  return recordedEvent('TokenDissociated', data, { stream: tokenStream(tenant, childId) });
};

const deleted = (tokenId: string, fields: Partial<DataOf<TokenEvent, 'TokenDeleted'>> = {}) => {
  const data: DataOf<TokenEvent, 'TokenDeleted'> = {
    token_id: tokenId,
    tenant_id: tenant,
    type: 'token',
    parent_ids: [],
    child_ids: [],
    deleted_by: actor,
    deleted_at: '2026-01-14T10:00:00.000Z',
    ...fields,
  };
  return recordedEvent('TokenDeleted', data, { stream: tokenStream(data.tenant_id, tokenId) });
};

const tenantDeleted = (tenantId: string) =>
  recordedEvent('TenantDeleted', {
    tenant_id: tenantId,
    deleted_by: actor,
    deleted_at: '2026-01-15T10:00:00.000Z',
  });

interface AssociationRow {
  tenant_id: string;
  parent_id: string;
  child_id: string;
  type: string;
  containers: string[];
  expires_at: Date | null;
  associated_at: Date;
}

const tokens = async (tx: PoolClient) =>
  (await tx.query<TokenRow>('SELECT * FROM tokens ORDER BY tenant_id, id')).rows;
const tokenIds = async (tx: PoolClient, tenantId = tenant) =>
  (await tokens(tx)).filter((row) => row.tenant_id === tenantId).map((row) => row.id);
const associations = async (tx: PoolClient) =>
  (
    await tx.query<AssociationRow>(
      `SELECT tenant_id, parent_id, child_id, type, containers, expires_at, associated_at
       FROM token_associations ORDER BY tenant_id, parent_id, child_id`,
    )
  ).rows;
/** The metadata lookup rows as `tenant/token:key=value`, and the same derived from the tokens. */
const metadataEntries = async (tx: PoolClient) => {
  const entries = async (sql: string) =>
    (await tx.query<{ entry: string }>(`SELECT entry FROM (${sql}) e ORDER BY entry`)).rows.map(
      (row) => row.entry,
    );
  const lookup = await entries(
    `SELECT tenant_id || '/' || token_id || ':' || key || '=' || value || '@' || created_at AS entry FROM token_metadata`,
  );
  const derived = await entries(
    `SELECT tenant_id || '/' || id || ':' || key || '=' || value || '@' || created_at AS entry
     FROM tokens, jsonb_each_text(metadata)`,
  );
  // The lookup table holds exactly the tokens' entries (with the token's created_at).
  expect(lookup).toEqual(derived);
  return lookup.map((entry) => entry.slice(0, entry.indexOf('@')));
};
/**
 * The kept child counts (token_child_counts) summed over their slots, as `tenant/parent:type=n`.
 * They must equal the same counted from the association rows that never expire, with no slot
 * left at zero or below.
 */
const childCounts = async (tx: PoolClient) => {
  const entries = async (sql: string) =>
    (await tx.query<{ entry: string }>(`SELECT entry FROM (${sql}) e ORDER BY entry`)).rows.map(
      (row) => row.entry,
    );
  const kept = await entries(
    `SELECT tenant_id || '/' || parent_id || ':' || type || '=' || sum(children) AS entry
     FROM token_child_counts GROUP BY tenant_id, parent_id, type`,
  );
  const derived = await entries(
    `SELECT tenant_id || '/' || parent_id || ':' || type || '=' || count(*) AS entry
     FROM token_associations WHERE expires_at IS NULL GROUP BY tenant_id, parent_id, type`,
  );
  expect(kept).toEqual(derived);
  const spent = await tx.query('SELECT 1 FROM token_child_counts WHERE children <= 0');
  expect(spent.rowCount).toBe(0);
  return kept;
};
/** The spec's transaction as the pool a query reads through, so that it sees the given rows. */
const poolOn = (tx: PoolClient) =>
  ({ connect: async () => ({ query: tx.query.bind(tx), release: () => undefined }) }) as unknown as Pool;
/** Associations as `parent>child`, of one tenant. */
const pairs = async (tx: PoolClient, tenantId = tenant) =>
  (await associations(tx))
    .filter((row) => row.tenant_id === tenantId)
    .map((row) => `${row.parent_id}>${row.child_id}`);

describe('tokensProjection', () => {
  const db = useTestPool([...vaultMigrations, ...tokensMigrations]);
  const spec = () => projectionSpec(tokensProjection, db.pool);

  describe('TokenCreated', () => {
    it('inserts the token as decided', async () => {
      await spec()
        .given([])
        .when([
          created('tok-1', {
            type: 'card',
            containers: ['/pci/high/', '/general/'],
            metadata: { customer: 'c-1' },
            expires_at: '2027-01-01T00:00:00.000Z',
          }),
        ])
        .then(async (tx) => {
          expect(await tokens(tx)).toEqual([
            {
              tenant_id: tenant,
              id: 'tok-1',
              type: 'card',
              data_ciphertext: 'sealed-tok-1',
              containers: ['/pci/high/', '/general/'],
              metadata: { customer: 'c-1' },
              fingerprint: 'fp-tok-1',
              expires_at: new Date('2027-01-01T00:00:00.000Z'),
              created_by: actor,
              created_at: new Date('2026-01-10T10:00:00.000Z'),
              modified_by: null,
              modified_at: null,
              privacy: null,
              card: null,
              bank: null,
              cvc_removed_at: null,
              search_indexes: null,
              fingerprint_expression: null,
              mask: null,
            },
          ]);
          expect(await associations(tx)).toEqual([]);
        });
    });

    it('inserts a child created under a parent together with its association', async () => {
      await spec()
        .given([created('parent')])
        .when([
          created('child', {
            parent_id: 'parent',
            type: 'bank',
            containers: ['/bank/'],
            expires_at: '2027-02-01T00:00:00.000Z',
            created_at: '2026-01-10T11:00:00.000Z',
          }),
        ])
        .then(async (tx) => {
          expect(await tokenIds(tx)).toEqual(['child', 'parent']);
          expect(await associations(tx)).toEqual([
            {
              tenant_id: tenant,
              parent_id: 'parent',
              child_id: 'child',
              type: 'bank',
              containers: ['/bank/'],
              expires_at: new Date('2027-02-01T00:00:00.000Z'),
              associated_at: new Date('2026-01-10T11:00:00.000Z'),
            },
          ]);
        });
    });

    it('is idempotent: the same events applied again change nothing', async () => {
      const events = [created('parent'), created('child', { parent_id: 'parent' })];
      await spec()
        .given(events)
        .when(events)
        .then(async (tx) => {
          expect(await tokenIds(tx)).toEqual(['child', 'parent']);
          expect(await pairs(tx)).toEqual(['parent>child']);
        });
    });

    it('keeps the first row when an id is created again (ids are never reused)', async () => {
      await spec()
        .given([created('tok-1')])
        .when([created('tok-1', { data_ciphertext: 'other', fingerprint: 'other' })])
        .then(async (tx) => {
          expect((await tokens(tx)).map((row) => row.data_ciphertext)).toEqual(['sealed-tok-1']);
        });
    });

    it('keeps token ids apart by tenant', async () => {
      await spec()
        .given([created('tok-1')])
        .when([created('tok-1', { tenant_id: otherTenant, data_ciphertext: 'theirs' })])
        .then(async (tx) => {
          const ciphertextOf = async (tenantId: string) =>
            (await tokens(tx)).filter((row) => row.tenant_id === tenantId).map((row) => row.data_ciphertext);
          expect(await ciphertextOf(tenant)).toEqual(['sealed-tok-1']);
          expect(await ciphertextOf(otherTenant)).toEqual(['theirs']);
        });
    });

    it('keeps the privacy and the card and bank summaries the events carry', async () => {
      const privacy = { classification: 'pci', impact_level: 'high', restriction_policy: 'mask' } as const;
      const card = {
        bin: '42424242',
        last4: '4242',
        brand: 'visa',
        funding: 'credit',
        expiration_month: 12,
        expiration_year: 2030,
      } as const;
      const bank = { routing_number: '011000015', account_number_last4: '6789' };
      await spec()
        .given([])
        .when([
          created('card-1', { type: 'card', privacy, card, cvc_expires_at: '2026-01-10T11:00:00.000Z' }),
          created('bank-1', { type: 'bank', bank }),
        ])
        .then(async (tx) => {
          expect((await tokens(tx)).map((row) => [row.id, row.privacy, row.card, row.bank])).toEqual([
            ['bank-1', null, null, bank],
            ['card-1', privacy, card, null],
          ]);
        });
    });
  });

  describe('masks', () => {
    it('keeps the mask expression a create or update gave; an update without one goes back to the default (null)', async () => {
      await spec()
        .given([])
        .when([
          created('m-1', { mask: '{{ data | last4 }}' }),
          created('m-2', { mask: { number: '{{ data.number | reveal_last: 4 }}' } }),
          created('m-3'),
          updated('m-1', { mask: '{{ data | reveal_first: 2 }}' }),
          updated('m-2'),
        ])
        .then(async (tx) => {
          expect((await tokens(tx)).map((row) => [row.id, row.mask])).toEqual([
            ['m-1', '{{ data | reveal_first: 2 }}'],
            ['m-2', null],
            ['m-3', null],
          ]);
        });
    });
  });

  describe('privacy on update', () => {
    it('takes the privacy an update carries; an update without one keeps the token’s', async () => {
      const high = { classification: 'general', impact_level: 'high', restriction_policy: 'redact' } as const;
      const low = { ...high, impact_level: 'low', restriction_policy: 'mask' } as const;
      await spec()
        .given([])
        .when([
          created('p-1', { privacy: high }),
          created('p-2', { privacy: high }),
          updated('p-1', { privacy: low, containers: ['/general/low/'] }),
          updated('p-2', { metadata: { k: 'w' } }),
        ])
        .then(async (tx) => {
          expect((await tokens(tx)).map((row) => [row.id, row.privacy, row.containers])).toEqual([
            ['p-1', low, ['/general/low/']],
            ['p-2', high, expect.any(Array)],
          ]);
        });
    });
  });

  describe('TokenCvcRemoved', () => {
    it('takes the new ciphertext and changes nothing else', async () => {
      const card = {
        bin: '424242',
        last4: '4242',
        brand: 'visa',
        expiration_month: 1,
        expiration_year: 2031,
      } as const;
      const removed = recordedEvent(
        'TokenCvcRemoved',
        {
          token_id: 'card-1',
          tenant_id: tenant,
          type: 'card' as const,
          data_ciphertext: 'sealed-without-cvc',
          removed_at: '2026-01-10T11:00:00.000Z',
        },
        { stream: tokenStream(tenant, 'card-1') },
      );
      await spec()
        .given([created('card-1', { type: 'card', card, metadata: { a: '1' } })])
        .when([removed])
        .then(async (tx) => {
          const [row] = await tokens(tx);
          expect(row).toEqual(
            expect.objectContaining({
              data_ciphertext: 'sealed-without-cvc',
              cvc_removed_at: new Date('2026-01-10T11:00:00.000Z'),
              fingerprint: 'fp-card-1',
              card,
              metadata: { a: '1' },
              containers: ['/general/'],
              modified_at: null,
            }),
          );
        });
    });

    it('takes what the event recomputed: fingerprint, indexes and their rows; what it leaves out is gone', async () => {
      const card = { bin: '424242', last4: '4242' } as const;
      const indexRows = async (tx: PoolClient) =>
        (
          await tx.query<{ value: string }>(
            'SELECT value FROM token_search_index WHERE tenant_id = $1 AND token_id = $2 ORDER BY value',
            [tenant, 'card-1'],
          )
        ).rows.map((row) => row.value);
      const byCvc = { expression: '{{ data.cvc }}', unique: true as const };
      const last4 = { expression: '{{ data.number | last4 }}' };
      const removed = recordedEvent(
        'TokenCvcRemoved',
        {
          token_id: 'card-1',
          tenant_id: tenant,
          type: 'card' as const,
          data_ciphertext: 'sealed-without-cvc',
          removed_at: '2026-01-10T11:00:00.000Z',
          derived: {
            fingerprint: 'fp-of-number',
            card,
            search_indexes: [byCvc, last4],
            search_index_values: ['h-last4'],
            data_claim: 'released' as const,
            index_claims: true as const,
          },
        },
        { stream: tokenStream(tenant, 'card-1') },
      );
      await spec()
        .given([
          created('card-1', {
            type: 'card',
            card,
            fingerprint: 'fp-of-cvc',
            fingerprint_expression: '{{ data.cvc }}',
            search_indexes: [byCvc, last4],
            search_index_values: ['h-cvc', 'h-last4'],
            unique_index_values: ['h-cvc'],
          }),
        ])
        .when([removed])
        .then(async (tx) => {
          const [row] = await tokens(tx);
          expect(row).toEqual(
            expect.objectContaining({
              data_ciphertext: 'sealed-without-cvc',
              fingerprint: 'fp-of-number',
              fingerprint_expression: null,
              search_indexes: [byCvc, last4],
              card,
            }),
          );
          expect(await indexRows(tx)).toEqual(['h-last4']);
        });
    });
  });

  describe('TokenUpdated', () => {
    it('takes the summaries of the updated data', async () => {
      const card = (year: number) => ({
        bin: '424242',
        last4: '4242',
        expiration_month: 1,
        expiration_year: year,
      });
      await spec()
        .given([created('card-1', { type: 'card', card: card(2030) })])
        .when([updated('card-1', { type: 'card', card: card(2032) })])
        .then(async (tx) => {
          expect((await tokens(tx))[0]!.card).toEqual(card(2032));
        });
    });

    it('sets the editable state in full: an expiry absent from the event is removed', async () => {
      await spec()
        .given([created('tok-1', { metadata: { a: '1' }, expires_at: '2027-01-01T00:00:00.000Z' })])
        .when([updated('tok-1', { containers: ['/moved/'], metadata: { b: '2' } })])
        .then(async (tx) => {
          expect(await tokens(tx)).toEqual([
            expect.objectContaining({
              id: 'tok-1',
              data_ciphertext: 'sealed-again-tok-1',
              fingerprint: 'fp-again-tok-1',
              containers: ['/moved/'],
              metadata: { b: '2' },
              expires_at: null,
              created_at: new Date('2026-01-10T10:00:00.000Z'),
              modified_by: actor,
              modified_at: new Date('2026-01-11T10:00:00.000Z'),
            }),
          ]);
        });
    });

    // An UPDATE … FROM with several rows for one token applies whichever its join meets first: a
    // hash join meets the last, a nested loop over the events the first. Both plans are tried.
    for (const [plan, settings] of [
      ['the planner’s join', {}],
      ['a nested loop', { enable_hashjoin: 'off', enable_mergejoin: 'off' }],
    ] as const) {
      it(`applies the last of several updates of a token in one batch (${plan})`, async () => {
        await projectionSpec(tokensProjection, db.pool, { settings })
          .given([created('tok-1'), created('tok-2')])
          .when([
            updated('tok-1', { metadata: { v: '1' } }),
            updated('tok-2', { metadata: { v: 'a' } }),
            updated('tok-1', { metadata: { v: '2' } }),
            updated('tok-2', { metadata: { v: 'b' } }),
            updated('tok-1', { metadata: { v: '3' }, modified_at: '2026-01-11T12:00:00.000Z' }),
          ])
          .then(async (tx) => {
            expect((await tokens(tx)).map((row) => [row.id, row.metadata.v, row.modified_at])).toEqual([
              ['tok-1', '3', new Date('2026-01-11T12:00:00.000Z')],
              ['tok-2', 'b', new Date('2026-01-11T10:00:00.000Z')],
            ]);
          });
      });
    }

    it('carries the new containers and expiry to the token’s associations as a child, not as a parent', async () => {
      await spec()
        .given([
          created('grandparent'),
          created('parent', { parent_id: 'grandparent' }),
          created('child', { parent_id: 'parent' }),
        ])
        .when([updated('parent', { containers: ['/moved/'], expires_at: '2027-03-01T00:00:00.000Z' })])
        .then(async (tx) => {
          expect(
            (await associations(tx)).map((row) => [
              row.parent_id,
              row.child_id,
              row.containers,
              row.expires_at,
            ]),
          ).toEqual([
            ['grandparent', 'parent', ['/moved/'], new Date('2027-03-01T00:00:00.000Z')],
            ['parent', 'child', ['/general/'], null],
          ]);
        });
    });

    it('changes nothing for a token the read model does not hold', async () => {
      await spec()
        .given([created('tok-1')])
        .when([updated('absent')])
        .then(async (tx) => {
          expect(await tokenIds(tx)).toEqual(['tok-1']);
          expect((await tokens(tx))[0]!.modified_at).toBeNull();
        });
    });
  });

  describe('TokenAssociated and TokenDissociated', () => {
    it('adds an association with the child’s fields', async () => {
      await spec()
        .given([created('parent'), created('child', { type: 'card', containers: ['/pci/'] })])
        .when([
          associated('parent', 'child', {
            type: 'card',
            containers: ['/pci/'],
            expires_at: '2027-04-01T00:00:00.000Z',
          }),
        ])
        .then(async (tx) => {
          expect(await associations(tx)).toEqual([
            {
              tenant_id: tenant,
              parent_id: 'parent',
              child_id: 'child',
              type: 'card',
              containers: ['/pci/'],
              expires_at: new Date('2027-04-01T00:00:00.000Z'),
              associated_at: new Date('2026-01-12T10:00:00.000Z'),
            },
          ]);
        });
    });

    it('is idempotent: an association applied again stays one row', async () => {
      const events = [created('parent'), created('child'), associated('parent', 'child')];
      await spec()
        .given(events)
        .when(events)
        .then(async (tx) => expect(await pairs(tx)).toEqual(['parent>child']));
    });

    it('removes exactly the dissociated pair', async () => {
      await spec()
        .given([
          created('p1'),
          created('p2'),
          created('child', { parent_id: 'p1' }),
          associated('p2', 'child'),
          created('other', { parent_id: 'p1' }),
        ])
        .when([dissociated('p1', 'child')])
        .then(async (tx) => {
          expect(await pairs(tx)).toEqual(['p1>other', 'p2>child']);
          expect(await tokenIds(tx)).toEqual(['child', 'other', 'p1', 'p2']);
        });
    });

    it('can associate a pair again after a dissociation', async () => {
      await spec()
        .given([created('parent'), created('child', { parent_id: 'parent' }), dissociated('parent', 'child')])
        .when([associated('parent', 'child')])
        .then(async (tx) => expect(await pairs(tx)).toEqual(['parent>child']));
    });
  });

  describe('TokenDeleted', () => {
    it('removes the token and every association it is part of, as child and as parent', async () => {
      await spec()
        .given([
          created('grandparent'),
          created('parent', { parent_id: 'grandparent' }),
          created('child-1', { parent_id: 'parent' }),
          created('child-2'),
          associated('parent', 'child-2'),
          created('unrelated', { parent_id: 'grandparent' }),
        ])
        .when([deleted('parent', { parent_ids: ['grandparent'], child_ids: ['child-1', 'child-2'] })])
        .then(async (tx) => {
          expect(await tokenIds(tx)).toEqual(['child-1', 'child-2', 'grandparent', 'unrelated']);
          expect(await pairs(tx)).toEqual(['grandparent>unrelated']);
        });
    });

    it('removes associations the event does not list (made after its listing of children)', async () => {
      await spec()
        .given([created('parent'), created('late', { parent_id: 'parent' })])
        .when([deleted('parent', { child_ids: [] })])
        .then(async (tx) => {
          expect(await tokenIds(tx)).toEqual(['late']);
          expect(await pairs(tx)).toEqual([]);
        });
    });

    it('removes only the deleting tenant’s token of that id', async () => {
      await spec()
        .given([created('tok-1'), created('tok-1', { tenant_id: otherTenant })])
        .when([deleted('tok-1')])
        .then(async (tx) => {
          expect(await tokenIds(tx)).toEqual([]);
          expect(await tokenIds(tx, otherTenant)).toEqual(['tok-1']);
        });
    });

    it('applies a batch of every type in commit order', async () => {
      await spec()
        .given([])
        .when([
          created('parent'),
          created('child', { parent_id: 'parent' }),
          created('other'),
          associated('other', 'child'),
          dissociated('parent', 'child'),
          updated('child', { containers: ['/moved/'] }),
          deleted('other'),
          created('last', { parent_id: 'parent' }),
        ])
        .then(async (tx) => {
          expect(await tokenIds(tx)).toEqual(['child', 'last', 'parent']);
          expect(await pairs(tx)).toEqual(['parent>last']);
          expect((await tokens(tx)).find((row) => row.id === 'child')?.containers).toEqual(['/moved/']);
        });
    });
  });

  describe('TenantDeleted', () => {
    it('removes the tenant’s tokens, associations and child counts, and no other tenant’s', async () => {
      await spec()
        .given([
          created('parent'),
          created('child', { parent_id: 'parent' }),
          created('parent', { tenant_id: otherTenant }),
          created('child', { tenant_id: otherTenant, parent_id: 'parent' }),
        ])
        .when([tenantDeleted(tenant)])
        .then(async (tx) => {
          expect(await tokenIds(tx)).toEqual([]);
          expect(await pairs(tx)).toEqual([]);
          expect(await tokenIds(tx, otherTenant)).toEqual(['child', 'parent']);
          expect(await pairs(tx, otherTenant)).toEqual(['parent>child']);
          expect(await childCounts(tx)).toEqual([`${otherTenant}/parent:token=1`]);
        });
    });
  });

  describe('metadata lookup rows (token_metadata)', () => {
    it('holds one row per entry of each created token, once even when the events come again', async () => {
      const events = [
        created('tok-1', { metadata: { customer: 'c-1', tier: 'gold' } }),
        created('tok-2', { metadata: { customer: 'c-1' } }),
        created('tok-3'),
        created('tok-1', { tenant_id: otherTenant, metadata: { customer: 'c-9' } }),
      ];
      await spec()
        .given(events)
        .when(events)
        .then(async (tx) => {
          expect(await metadataEntries(tx)).toEqual(
            [
              `${tenant}/tok-1:customer=c-1`,
              `${tenant}/tok-1:tier=gold`,
              `${tenant}/tok-2:customer=c-1`,
              `${otherTenant}/tok-1:customer=c-9`,
            ].sort(),
          );
        });
    });

    it('follows updates: dropped entries go, changed ones take the new value, new ones come (last update of a batch)', async () => {
      await spec()
        .given([created('tok-1', { metadata: { a: '1', b: '2', keep: 'k' } }), created('tok-2')])
        .when([
          updated('tok-1', { metadata: { b: 'x' } }),
          updated('tok-2', { metadata: { only: 'now' } }),
          updated('tok-1', { metadata: { b: '3', c: '4', keep: 'k' } }),
        ])
        .then(async (tx) => {
          expect(await metadataEntries(tx)).toEqual([
            `${tenant}/tok-1:b=3`,
            `${tenant}/tok-1:c=4`,
            `${tenant}/tok-1:keep=k`,
            `${tenant}/tok-2:only=now`,
          ]);
        });
      await spec()
        .given([created('tok-1', { metadata: { a: '1' } })])
        .when([updated('tok-1', { metadata: {} })])
        .then(async (tx) => {
          expect(await metadataEntries(tx)).toEqual([]);
        });
    });

    it('drops a deleted token’s entries, not those of the same id in another tenant', async () => {
      await spec()
        .given([
          created('tok-1', { metadata: { a: '1' } }),
          created('tok-2', { metadata: { a: '1' } }),
          created('tok-1', { tenant_id: otherTenant, metadata: { a: '1' } }),
        ])
        .when([deleted('tok-1')])
        .then(async (tx) => {
          expect(await metadataEntries(tx)).toEqual(
            [`${tenant}/tok-2:a=1`, `${otherTenant}/tok-1:a=1`].sort(),
          );
        });
    });

    it('drops a deleted tenant’s entries, and no other tenant’s', async () => {
      await spec()
        .given([
          created('tok-1', { metadata: { a: '1' } }),
          created('tok-1', { tenant_id: otherTenant, metadata: { a: '1' } }),
        ])
        .when([tenantDeleted(tenant)])
        .then(async (tx) => {
          expect(await metadataEntries(tx)).toEqual([`${otherTenant}/tok-1:a=1`]);
        });
    });
  });
  describe('blind index rows (token_search_index)', () => {
    /** The rows as `tenant/token:value`, the tenant shown as `other` for the other tenant. */
    const indexRows = async (tx: PoolClient) =>
      (
        await tx.query<{ entry: string }>(
          `SELECT CASE WHEN tenant_id = $1 THEN 'mine' ELSE 'other' END || '/' || token_id || ':' || value AS entry
           FROM token_search_index ORDER BY entry`,
          [tenant],
        )
      ).rows.map((row) => row.entry);
    const indexes = { search_indexes: [{ expression: '{{ data }}' }], fingerprint_expression: '{{ data }}' };

    it('follows the tokens: inserted on create, replaced on update, gone with the token and its tenant', async () => {
      await spec()
        .given([
          created('a', { ...indexes, search_index_values: ['h1', 'h2'] }),
          created('b', { search_index_values: ['h1'] }),
          created('c', { tenant_id: otherTenant, search_index_values: ['h1'] }),
        ])
        .when([updated('a', { ...indexes, search_index_values: ['h2', 'h3'] }), updated('b'), deleted('x')])
        .then(async (tx) => {
          expect(await indexRows(tx)).toEqual(['mine/a:h2', 'mine/a:h3', 'other/c:h1']);
          const [row] = (await tokens(tx)).filter((token) => token.id === 'a');
          expect(row).toMatchObject(indexes);
        });
      await spec()
        .given([created('a', { search_index_values: ['h1'] }), created('b', { search_index_values: ['h1'] })])
        .when([deleted('a'), tenantDeleted(otherTenant)])
        .then(async (tx) => {
          expect(await indexRows(tx)).toEqual(['mine/b:h1']);
        });
    });
  });

  describe('kept child counts (token_child_counts)', () => {
    const count = (entry: string) => `${tenant}/${entry}`;

    it('counts a parent’s children that never expire, by type, once even when the events come again', async () => {
      const events = [
        created('parent'),
        created('c1', { parent_id: 'parent' }),
        created('c2', { parent_id: 'parent', type: 'card' }),
        created('c3'),
        associated('parent', 'c3'),
        created('c4', { parent_id: 'parent', expires_at: '2027-01-01T00:00:00.000Z' }),
      ];
      await spec()
        .given(events)
        .when(events)
        .then(async (tx) => {
          expect(await childCounts(tx)).toEqual([count('parent:card=1'), count('parent:token=2')]);
        });
    });

    it('spreads one parent’s children over several rows (slots) and sums them', async () => {
      const children = Array.from({ length: 40 }, (_, index) =>
        created(`c${index}`, { parent_id: 'parent' }),
      );
      await spec()
        .given([created('parent')])
        .when(children)
        .then(async (tx) => {
          expect(await childCounts(tx)).toEqual([count('parent:token=40')]);
          const slots = await tx.query('SELECT DISTINCT slot FROM token_child_counts');
          expect(slots.rowCount).toBeGreaterThan(1);
        });
    });

    it('follows dissociations and deletions, and keeps no row for a parent left without children', async () => {
      await spec()
        .given([
          created('parent'),
          created('other-parent'),
          created('c1', { parent_id: 'parent' }),
          created('c2', { parent_id: 'parent' }),
          associated('other-parent', 'c1'),
        ])
        .when([
          dissociated('parent', 'c1'),
          deleted('c2', { parent_ids: ['parent'] }),
          deleted('other-parent', { child_ids: ['c1'] }),
        ])
        .then(async (tx) => {
          expect(await childCounts(tx)).toEqual([]);
          expect((await tx.query('SELECT 1 FROM token_child_counts')).rowCount).toBe(0);
        });
    });

    it('takes a child out of its parents’ counts when an update gives it an expiry', async () => {
      await spec()
        .given([created('parent'), created('child', { parent_id: 'parent' })])
        .when([updated('child', { expires_at: '2027-01-01T00:00:00.000Z' })])
        .then(async (tx) => expect(await childCounts(tx)).toEqual([]));
    });

    it('counts the child again when an update removes its expiry', async () => {
      await spec()
        .given([
          created('parent'),
          created('child', { parent_id: 'parent', expires_at: '2027-01-01T00:00:00.000Z' }),
        ])
        .when([updated('child')])
        .then(async (tx) => expect(await childCounts(tx)).toEqual([count('parent:token=1')]));
    });
  });

  describe('child page totals (TokenQueries.children, on the rows above)', () => {
    const clock = { now: () => new Date('2026-06-01T00:00:00.000Z') };
    const family = [
      created('parent'),
      created('c1', { parent_id: 'parent' }),
      created('c2', { parent_id: 'parent', expires_at: '2027-01-01T00:00:00.000Z' }),
      created('c3', { parent_id: 'parent', expires_at: '2026-03-01T00:00:00.000Z' }),
      created('c4', { parent_id: 'parent', type: 'card' }),
      created('c5', { parent_id: 'parent', type: 'card', containers: ['/pci/'] }),
      created('c6', { tenant_id: otherTenant, parent_id: 'parent' }),
    ];
    type ChildFilter = Parameters<TokenQueries['children']>[2];
    const page: ChildFilter = { ids: [], types: [], readableUnder: null, page: 1, size: 10 };
    const childPage = (tx: PoolClient, parentId: string, filter: Partial<ChildFilter> = {}) =>
      new TokenQueries(poolOn(tx), clock).children(tenant, parentId, { ...page, ...filter });
    const listed = async (tx: PoolClient, filter: Partial<ChildFilter>) => {
      const { rows, total } = (await childPage(tx, 'parent', filter))!;
      return { ids: rows.map((row) => row.id), total };
    };

    it('counts live children only: kept counts plus the unexpired children with an expiry', async () => {
      await spec()
        .given(family)
        .when([])
        .then(async (tx) => {
          expect(await listed(tx, {})).toEqual({ ids: ['c1', 'c2', 'c4', 'c5'], total: 4 });
          expect(await listed(tx, { types: ['token'] })).toEqual({ ids: ['c1', 'c2'], total: 2 });
          expect(await listed(tx, { types: ['card', 'token'] })).toEqual({
            ids: ['c1', 'c2', 'c4', 'c5'],
            total: 4,
          });
        });
    });

    it('counts the matching rows when ids or the key’s containers filter them', async () => {
      await spec()
        .given(family)
        .when([])
        .then(async (tx) => {
          expect(await listed(tx, { ids: ['c1', 'c3', 'c4'] })).toEqual({ ids: ['c1', 'c4'], total: 2 });
          expect(await listed(tx, { readableUnder: ['/pci/'] })).toEqual({ ids: ['c5'], total: 1 });
        });
    });

    it('comes with the parent’s containers, and is no page at all without a live parent', async () => {
      await spec()
        .given([
          ...family,
          created('pci-parent', { containers: ['/pci/', '/general/'] }),
          created('childless'),
          created('expired-parent', { expires_at: '2026-03-01T00:00:00.000Z' }),
          created('c7', { parent_id: 'expired-parent' }),
          created('other-tenants-parent', { tenant_id: otherTenant }),
          created('c8', { tenant_id: otherTenant, parent_id: 'other-tenants-parent' }),
        ])
        .when([])
        .then(async (tx) => {
          const parentOf = (containers: string[]) => ({ containers, type: 'token', privacy: null });
          expect((await childPage(tx, 'parent'))?.parent).toEqual(parentOf(['/general/']));
          expect((await childPage(tx, 'pci-parent'))?.parent).toEqual(parentOf(['/pci/', '/general/']));
          expect(await childPage(tx, 'childless')).toEqual({
            parent: parentOf(['/general/']),
            rows: [],
            total: 0,
          });
          expect(await childPage(tx, 'expired-parent')).toBeUndefined();
          expect(await childPage(tx, 'other-tenants-parent')).toBeUndefined();
          expect(await childPage(tx, 'no-such-token')).toBeUndefined();
        });
    });

    it('gives the total with an empty page past the last one', async () => {
      await spec()
        .given(family)
        .when([])
        .then(async (tx) => {
          expect(await listed(tx, { page: 3, size: 2 })).toEqual({ ids: [], total: 4 });
          expect(await listed(tx, { types: ['card'], page: 2, size: 2 })).toEqual({ ids: [], total: 2 });
        });
    });
  });
});
