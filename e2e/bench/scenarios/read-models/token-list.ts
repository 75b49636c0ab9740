// Data for the token-list and search scenarios of the benchmark: a tenant with a million tokens,
// each with two search indexes, written as the projection would, and the GET /tokens paths and
// POST /v2/tokens/search bodies that read them.
import type pg from 'pg';
import { LocalKeyring, Vault } from '@tokenvault/vault';

export const tokenListCount = 1_000_000;
/** Tokens sharing one `customer` metadata value: what a selective metadata filter finds. */
const perCustomer = 1_000;
const pageSize = 20;
/** Cursor positions the deep-page scenario cycles through, spread over the middle of the list. */
const deepPages = 50;

const idOf = (g: number) => `list-${String(g).padStart(7, '0')}`;

/**
 * Each token's search indexes, on its data `{ index: g, … }`: one value of its own (as an e-mail
 * or a card number is) and one that about 100 tokens share (as a card's last four digits are).
 */
const searchIndexes = [
  { expression: '{{ data.index }}' },
  { expression: '{{ data.index | modulo: 10007 }}' },
];
const sharedModulus = 10_007;
/** The shared index value the search scenarios look for (about 100 tokens, half of them `gold`). */
const searchedValue = 4242;
/** Blind index rows written per statement: the values go as one array parameter. */
const searchRowsPerStatement = 100_000;

/**
 * Writes `count` token rows in one statement, one per millisecond up to now (so they are the
 * tenant's newest): 2 in 3 `token` in /general/high/, 1 in 3 `card` in /pci/high/, metadata
 * `customer` (1 in 1,000 share one) and `tier`. Sealing a million values would take longer than
 * the rest of the run, so only the rows the measured pages return get a real ciphertext, each
 * under a token key of its own as the service seals them; the others hold one that never opens (a
 * page that reached them would answer 500 and fail the run). Then refreshes the planner's
 * statistics of the tokens. Returns the paths to measure.
 */
export async function seedTokenList(
  pool: pg.Pool,
  masterKey: string,
  tenantId: string,
  count: number,
): Promise<{
  firstPage: () => string;
  deepCursor: (index: number) => string;
  byMetadata: () => string;
  v2ByMetadata: () => string;
  searchByIndex: string;
  searchByIndexAndMetadata: string;
}> {
  const startMs = Date.now() - count;
  const createdAtOfG = `to_timestamp($2::float8 / 1000) + g * interval '1 millisecond'`;
  await pool.query(
    `INSERT INTO tokens (tenant_id, id, type, data_ciphertext, containers, metadata, fingerprint,
                         created_by, created_at, search_indexes)
     SELECT $1, 'list-' || lpad(g::text, 7, '0'), t.type, 'v1.unsealed', ARRAY[t.container],
            jsonb_build_object('customer', 'c-' || (g % $4::int), 'tier', (ARRAY['gold', 'silver'])[1 + g % 2]),
            md5(g::text), $1, ${createdAtOfG}, $5::jsonb
     FROM generate_series(1, $3::int) AS g,
          LATERAL (SELECT CASE WHEN g % 3 = 0 THEN 'card' ELSE 'token' END AS type,
                          CASE WHEN g % 3 = 0 THEN '/pci/high/' ELSE '/general/high/' END AS container) t`,
    [tenantId, startMs, count, count / perCustomer, JSON.stringify(searchIndexes)],
  );
  // The blind index rows the projection writes with each token (token_search_index): the HMAC of
  // each index's value under the tenant's search key, computed by the vault as the service does.
  const vault = new Vault(pool, new LocalKeyring([['default', masterKey]]));
  const shared = await Promise.all(
    Array.from({ length: sharedModulus }, async (_, value) => vault.searchIndex(tenantId, String(value))),
  );
  await pool.query(
    `INSERT INTO token_search_index (tenant_id, token_id, value, created_at)
     SELECT $1, 'list-' || lpad(g::text, 7, '0'), ($4::text[])[1 + g % ${sharedModulus}], ${createdAtOfG}
     FROM generate_series(1, $3::int) AS g`,
    [tenantId, startMs, count, shared],
  );
  // A token below the modulus has one value for both indexes: one row, as the projection keeps it.
  for (let from = 1; from <= count; from += searchRowsPerStatement) {
    const to = Math.min(count, from + searchRowsPerStatement - 1);
    const own = await Promise.all(
      Array.from({ length: to - from + 1 }, async (_, offset) =>
        vault.searchIndex(tenantId, String(from + offset)),
      ),
    );
    await pool.query(
      `INSERT INTO token_search_index (tenant_id, token_id, value, created_at)
       SELECT $1, 'list-' || lpad(g::text, 7, '0'), v.value, ${createdAtOfG}
       FROM unnest($4::text[]) WITH ORDINALITY AS v(value, n), LATERAL (SELECT $3::int + n::int - 1 AS g) AS at
       ON CONFLICT DO NOTHING`,
      [tenantId, startMs, from, own],
    );
  }
  // The metadata lookup rows the tokens projection writes with each token.
  await pool.query(
    `INSERT INTO token_metadata (tenant_id, token_id, key, value, created_at)
     SELECT t.tenant_id, t.id, e.key, e.value, t.created_at
     FROM tokens t, jsonb_each_text(t.metadata) e WHERE t.tenant_id = $1 AND t.id LIKE 'list-%'`,
    [tenantId],
  );
  await pool.query(
    `INSERT INTO token_type_usage (tenant_id, type, count, last_created_at)
     SELECT tenant_id, type, count(*), max(created_at) FROM tokens
     WHERE tenant_id = $1 AND id LIKE 'list-%' GROUP BY tenant_id, type
     ON CONFLICT (tenant_id, type) DO UPDATE SET count = token_type_usage.count + excluded.count`,
    [tenantId],
  );

  // The rows the measured pages read: the newest page, the page after each deep cursor, and the
  // newest page of one customer.
  const deep = Array.from({ length: deepPages }, (_, index) =>
    Math.round(count * 0.1 + ((count * 0.8) / deepPages) * index),
  );
  const customer = 42;
  const newestOfCustomer = count - ((count - customer) % perCustomer);
  const read = new Set<number>();
  for (let g = count; g > count - pageSize - 1; g--) read.add(g);
  for (const cursor of deep) for (let g = cursor - 1; g >= cursor - pageSize - 1; g--) read.add(g);
  for (let k = 0; k <= pageSize; k++) read.add(newestOfCustomer - k * perCustomer);
  // The newest tokens holding the searched value: a page of them, and a page of the `gold` ones.
  const newestSearched = count - ((count - searchedValue) % sharedModulus);
  for (let k = 0; k <= 2 * pageSize + 1; k++) read.add(newestSearched - k * sharedModulus);
  // Sealed as the service seals a token: under a key of its own, stored wrapped in token_keys.
  const sealed = await Promise.all(
    [...read].map(async (g) => {
      const { ciphertext, newKey } = await vault.sealToken(tenantId, idOf(g), {
        index: g,
        name: 'Ada Lovelace',
      });
      const key = newKey!;
      return {
        id: idOf(g),
        data_ciphertext: ciphertext,
        wrapped_key: key.wrappedKey,
        tenant_key_version: key.tenantKeyVersion,
      };
    }),
  );
  await pool.query(
    `WITH s AS (SELECT * FROM jsonb_to_recordset($2::jsonb)
                  AS s(id text, data_ciphertext text, wrapped_key text, tenant_key_version int)),
     keys AS (INSERT INTO token_keys (tenant_id, token_id, wrapped_key, tenant_key_version)
              SELECT $1, id, wrapped_key, tenant_key_version FROM s)
     UPDATE tokens t SET data_ciphertext = s.data_ciphertext FROM s WHERE t.tenant_id = $1 AND t.id = s.id`,
    [tenantId, JSON.stringify(sealed)],
  );
  await pool.query('VACUUM ANALYZE tokens, token_metadata, token_search_index, token_keys');

  // The service's cursor is base64url of [created_at, id] (packages/platform/src/cursor.ts).
  const cursorOf = (g: number) =>
    Buffer.from(JSON.stringify([new Date(startMs + g).toISOString(), idOf(g)])).toString('base64url');
  return {
    firstPage: () => `/tokens?size=${pageSize}`,
    deepCursor: (index) => `/tokens?size=${pageSize}&start=${cursorOf(deep[index % deepPages]!)}`,
    byMetadata: () => `/tokens?size=${pageSize}&metadata.customer=c-${customer}`,
    v2ByMetadata: () =>
      `/v2/tokens?size=${pageSize}&metadata=${encodeURIComponent(JSON.stringify({ customer: `c-${customer}` }))}`,
    searchByIndex: JSON.stringify({ query: `data:${searchedValue}`, size: pageSize }),
    searchByIndexAndMetadata: JSON.stringify({
      query: `data:${searchedValue} AND metadata.tier:gold`,
      size: pageSize,
    }),
  };
}
