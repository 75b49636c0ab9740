// Search indexes are how a team finds "the token of SSN 123-45-6789" without revealing it, which
// makes their stored values a target: an SSN has about 10^9 values, a last four 10^4, so a stored
// plain hash (or an HMAC under a key kept beside it) lets whoever copies the database confirm
// guesses offline. The attackers: (a) an operator or thief holding a dump of the database but not
// the master key; (b) another tenant indexing the same value and searching for it; (c) a key the
// tenant gave no token:search; (d) a caller probing fields that are not indexed, hoping for a
// plaintext scan.
import { createHash, createHmac, hkdfSync } from 'node:crypto';
import { beforeAll, describe, expect, it } from 'vitest';
import { openMasterKeyring, Vault } from '@tokenvault/vault';
import { useStack, type TestTenant } from '../support/stack.ts';

const ssn = '536-22-8431';
const guesses = [ssn, '536228431', '8431'];

describe('attack: search indexes and search', () => {
  const env = useStack({ LOG_LEVEL: 'warn' });
  let tokenId: string;
  let rival: TestTenant;
  let rivalTokenId: string;

  beforeAll(async () => {
    const body = {
      type: 'social_security_number',
      data: ssn,
      search_indexes: ['{{ data }}', '{{ data | replace: "-", "" }}', '{{ data | last4 }}'],
    };
    const mine = await env.tenant.client.request<{ id: string }>('POST', '/tokens', { body });
    expect(mine.status).toBe(201);
    tokenId = mine.body.id;
    rival = await env.stack.createTenant('Rival');
    const theirs = await rival.client.request<{ id: string }>('POST', '/tokens', { body });
    expect(theirs.status).toBe(201);
    rivalTokenId = theirs.body.id;
  });

  /** Every row of every table, as text: what a dump of the database holds. */
  const dump = async () => {
    const pool = env.stack.service.runtime.ownerPool;
    const tables = await pool.query<{ name: string }>(
      `SELECT quote_ident(table_name) AS name FROM information_schema.tables
       WHERE table_schema = 'public' AND table_type = 'BASE TABLE'`,
    );
    const rows: string[] = [];
    for (const { name } of tables.rows) {
      const result = await pool.query<{ row: string }>(`SELECT t::text AS row FROM ${name} t`);
      rows.push(...result.rows.map((row) => row.row));
    }
    return rows.join('\n');
  };

  it('(a) a dump without the master key cannot confirm a guess: the stored values match no digest under any key the dump holds', async () => {
    const pool = env.stack.service.runtime.ownerPool;
    const stored = (
      await pool.query<{ value: string }>('SELECT value FROM token_search_index WHERE token_id = $1', [
        tokenId,
      ])
    ).rows.map((row) => row.value);
    expect(stored).toHaveLength(3);
    const text = await dump();
    // The plaintext is nowhere, in no form the indexes gave (four digits alone may occur by chance).
    for (const guess of guesses.slice(0, 2)) expect(text).not.toContain(guess);

    // Every key material the dump offers: nothing, the tenant id, each wrapped key (as text and
    // as bytes), and keys derived from those as the service derives its own.
    const keyRows = (
      await pool.query<{ wrapped_data_key: string; wrapped_fingerprint_key: string }>(
        'SELECT wrapped_data_key, wrapped_fingerprint_key FROM tenant_keys WHERE tenant_id = $1',
        [env.tenant.tenantId],
      )
    ).rows;
    expect(keyRows.length).toBeGreaterThan(0);
    const candidates: Buffer[] = [Buffer.alloc(0), Buffer.from(env.tenant.tenantId)];
    for (const row of keyRows) {
      for (const wrapped of [row.wrapped_data_key, row.wrapped_fingerprint_key]) {
        const bytes = Buffer.from(wrapped.replace(/^v1\./, ''), 'base64');
        candidates.push(Buffer.from(wrapped), bytes, bytes.subarray(28), bytes.subarray(-32));
      }
    }
    const derived = candidates.map((key) =>
      Buffer.from(hkdfSync('sha256', key, env.tenant.tenantId, 'tokenvault search index v1', 32)),
    );
    const digests = (guess: string) => [
      createHash('sha256').update(guess).digest('base64url'),
      createHash('sha256').update(guess).digest('hex'),
      ...[...candidates, ...derived].map((key) =>
        createHmac('sha256', key).update(guess).digest('base64url'),
      ),
    ];
    for (const guess of guesses) {
      for (const digest of digests(guess)) expect(stored).not.toContain(digest);
    }

    // With the master key the service's own derivation confirms each: the stored values are the
    // blind indexes of these very guesses, so the checks above would have caught a weak digest.
    const vault = new Vault(pool, openMasterKeyring(env.stack.config));
    const withMasterKey = await Promise.all(
      guesses.map((guess) => vault.searchIndex(env.tenant.tenantId, guess)),
    );
    expect([...stored].sort()).toEqual([...withMasterKey].sort());

    // The tenant's keys are in the database only wrapped: neither the fingerprint key nor the
    // search key derived from it appears in clear, in any encoding.
    const ring = openMasterKeyring(env.stack.config);
    const [keys] = (
      await pool.query<{ kek_id: string; wrapped_fingerprint_key: string; version: number }>(
        'SELECT kek_id, wrapped_fingerprint_key, version FROM tenant_keys WHERE tenant_id = $1 ORDER BY version',
        [env.tenant.tenantId],
      )
    ).rows;
    const fingerprintKey = await ring.unwrap(
      keys!.kek_id,
      keys!.wrapped_fingerprint_key,
      `fingerprint-key:${env.tenant.tenantId}`,
    );
    const searchKey = Buffer.from(
      hkdfSync('sha256', fingerprintKey, env.tenant.tenantId, 'tokenvault search index v1', 32),
    );
    expect(createHmac('sha256', searchKey).update(ssn).digest('base64url')).toBe(withMasterKey[0]);
    for (const key of [fingerprintKey, searchKey]) {
      for (const encoding of ['base64', 'base64url', 'hex'] as const) {
        expect(text).not.toContain(key.toString(encoding));
      }
    }
  });

  it('(b) a search never matches another tenant’s token with the same indexed value', async () => {
    for (const [tenant, own, other] of [
      [env.tenant, tokenId, rivalTokenId],
      [rival, rivalTokenId, tokenId],
    ] as const) {
      for (const guess of guesses) {
        const found = await tenant.client.request<{ data: { id: string }[] }>('POST', '/v2/tokens/search', {
          body: { query: `data:"${guess}"` },
        });
        expect(found.status).toBe(200);
        const ids = found.body.data.map((token) => token.id);
        expect(ids).toContain(own);
        expect(ids).not.toContain(other);
      }
    }
  });

  it('(c) a key without token:search gets a 403 on both searches', async () => {
    const reader = await env.tenant.client.applications.create({
      name: 'reader',
      type: 'private',
      permissions: ['token:read', 'token:create'],
    });
    for (const path of ['/v2/tokens/search', '/tokens/search']) {
      const refused = await env.tenant.client.request<{ detail?: string }>('POST', path, {
        apiKey: reader.key,
        body: { query: `data:${ssn}` },
      });
      expect(refused.status, path).toBe(403);
      expect(JSON.stringify(refused.body)).not.toContain(tokenId);
    }
  });

  it('(d) a query on a field that is not indexed is a 400 naming body.query and the searchable fields', async () => {
    for (const query of ['data.number:4242', `value:${ssn}`, 'data:9999 AND expires_at:2030']) {
      const refused = await env.tenant.client.request<{ errors?: Record<string, string[]> }>(
        'POST',
        '/v2/tokens/search',
        { body: { query } },
      );
      expect(refused.status, query).toBe(400);
      expect(refused.body.errors?.['body.query']?.[0], query).toMatch(
        /is not searchable; the searchable fields are data, metadata/,
      );
      expect(JSON.stringify(refused.body)).not.toContain(ssn);
    }
  });
});
