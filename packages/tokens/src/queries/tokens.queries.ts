import { withTenant, type Clock, type Pool } from '@tokenvault/platform';
import {
  privacyOf,
  type TokenMask,
  type TokenPrivacy,
  type TokenResponse,
  type TokenType,
} from '@tokenvault/contracts';
import { maskOf } from '../domain/token-mask.ts';
import type { BankSummary, CardSummary, SearchIndexSpec } from '../domain/tokens.events.ts';

export interface TokenRow {
  tenant_id: string;
  id: string;
  type: TokenType;
  data_ciphertext: string;
  containers: string[];
  metadata: Record<string, string>;
  fingerprint: string;
  expires_at: Date | null;
  created_by: string;
  created_at: Date;
  modified_by: string | null;
  modified_at: Date | null;
  /** As its create gave it over the type's defaults; null for tokens from before privacy (the defaults). */
  privacy: TokenPrivacy | null;
  card: CardSummary | null;
  bank: BankSummary | null;
  /** Its search index expressions and fingerprint expression (null: none, the type's own). */
  search_indexes: SearchIndexSpec[] | null;
  fingerprint_expression: string | null;
  /** Its mask expression as given (null: its type's default, if any). */
  mask: TokenMask | null;
  /** When a card's CVC was last removed from its data (TokenCvcRemoved). */
  cvc_removed_at: Date | null;
  /** The token's key as `token_keys` holds it (null: destroyed, or a token sealed before token keys). */
  wrapped_key: string | null;
  tenant_key_version: number | null;
}

/**
 * A token row with its wrapped key (`withKeyOf` joins it): opening the token then needs no query
 * of its own. Row-level security limits token_keys to the tenant as it does tokens. Each row's key
 * is one primary-key lookup (a lateral join): with a plain join the planner read all the tenant's
 * keys for a page of 20 rows (a hash of them, or a loop over them per row), with or without fresh
 * statistics (docs/performance.md, search at 1,000,000 tokens).
 */
const tokenWithKey = (alias: string) => `${alias}.*, k.wrapped_key, k.tenant_key_version`;
const withKeyOf = (alias: string) =>
  `LEFT JOIN LATERAL (SELECT wrapped_key, tenant_key_version FROM token_keys
     WHERE tenant_id = ${alias}.tenant_id AND token_id = ${alias}.id LIMIT 1) k ON true`;

/** Not expired at `placeholder` (the clock's now: every expiry check reads the one clock). */
const liveAt = (placeholder: string, table = '') =>
  `(${table}expires_at IS NULL OR ${table}expires_at > ${placeholder}::timestamptz)`;

const maskField = (mask: TokenMask | undefined) => (mask === undefined ? {} : { mask });

/** The response fields of a token; `data` is added only by callers that opened it for a reader. */
export function tokenFields(
  row: Omit<TokenRow, 'data_ciphertext' | 'wrapped_key' | 'tenant_key_version' | 'cvc_removed_at'>,
): TokenResponse {
  return {
    id: row.id,
    tenant_id: row.tenant_id,
    type: row.type,
    containers: row.containers,
    metadata: row.metadata,
    fingerprint: row.fingerprint,
    ...(row.expires_at ? { expires_at: row.expires_at.toISOString() } : {}),
    created_by: row.created_by,
    created_at: row.created_at.toISOString(),
    ...(row.modified_by ? { modified_by: row.modified_by } : {}),
    ...(row.modified_at ? { modified_at: row.modified_at.toISOString() } : {}),
    // Its restriction policy is what a read gets when the caller's access masks or redacts it
    // without naming how (docs/token-types.md).
    privacy: privacyOf(row.type, row.privacy),
    ...maskField(maskOf(row.type, row.mask)),
    ...(row.card ? { card: row.card } : {}),
    ...(row.bank ? { bank: row.bank } : {}),
    // As a create takes them: an expression, or the object form of a unique index.
    ...(row.search_indexes?.length
      ? {
          search_indexes: row.search_indexes.map((index) =>
            index.unique ? { expression: index.expression, unique: true } : index.expression,
          ),
        }
      : {}),
    ...(row.fingerprint_expression ? { fingerprint_expression: row.fingerprint_expression } : {}),
  };
}

/** What the access decider reads of a token: its containers and its privacy (defaults for rows from before privacy). */
export const readTargetOf = (row: Pick<TokenRow, 'containers' | 'type' | 'privacy'>) => ({
  containers: row.containers,
  privacy: privacyOf(row.type, row.privacy),
});

/** What a token list or search keeps (TokenQueries.list). */
export interface TokenListFilter {
  types: string[];
  containers: string[];
  readableUnder: string[] | null;
  /** Only tokens under these containers (a search by terms on data: the key's revealing rules); null: no such limit. */
  revealableUnder?: string[] | null;
  metadata: Record<string, string>;
  after: { createdAt: string; id: string } | undefined;
  offset: number;
  size: number;
  indexValues?: string[];
  fingerprints?: string[];
  created?: { from?: string; to?: string };
}

/** Reads run as the tenant: row-level security hides every other tenant's rows. */
export class TokenQueries {
  private readonly appPool: Pool;
  private readonly clock: Clock;
  constructor(appPool: Pool, clock: Clock) {
    this.appPool = appPool;
    this.clock = clock;
  }

  /** A live token (not deleted, not expired), or undefined. */
  async get(tenantId: string, id: string): Promise<TokenRow | undefined> {
    return withTenant(this.appPool, tenantId, async (client) => {
      const result = await client.query<TokenRow>({
        name: 'tokens_live_by_id',
        text: `SELECT ${tokenWithKey('t')} FROM tokens t ${withKeyOf('t')}
               WHERE t.tenant_id = $1 AND t.id = $2 AND ${liveAt('$3', 't.')}`,
        values: [tenantId, id, this.clock.now()],
      });
      return result.rows[0];
    });
  }

  /** The live tokens among these ids (any order; missing, expired and deleted ones are absent). */
  async getMany(tenantId: string, ids: readonly string[]): Promise<TokenRow[]> {
    if (ids.length === 0) return [];
    return withTenant(this.appPool, tenantId, async (client) => {
      const result = await client.query<TokenRow>(
        `SELECT ${tokenWithKey('t')} FROM tokens t ${withKeyOf('t')}
         WHERE t.tenant_id = $1 AND t.id = ANY($2::text[]) AND ${liveAt('$3', 't.')}`,
        [tenantId, ids, this.clock.now()],
      );
      return result.rows;
    });
  }

  /** Ids of a token's children as the read model has them (what a deletion ends). */
  async childIds(tenantId: string, parentId: string): Promise<string[]> {
    return withTenant(this.appPool, tenantId, async (client) => {
      const result = await client.query<{ child_id: string }>(
        'SELECT child_id FROM token_associations WHERE tenant_id = $1 AND parent_id = $2 ORDER BY associated_at, child_id',
        [tenantId, parentId],
      );
      return result.rows.map((row) => row.child_id);
    });
  }

  /**
   * Every live child of a live parent (by association time then id) under `readableUnder`, as
   * what the access decider reads of each (its id, containers, type and privacy), with the
   * parent's; undefined when the parent is not a live token of the tenant. A key with rules lists
   * children by its read decision on each (children.routes.ts): its pages and total are counted
   * over the children it may read, which the SQL filter alone cannot tell.
   */
  async childTargets(
    tenantId: string,
    parentId: string,
    filter: { ids: string[]; types: string[]; readableUnder: string[] },
  ): Promise<
    | {
        parent: Pick<TokenRow, 'containers' | 'type' | 'privacy'>;
        children: Pick<TokenRow, 'id' | 'containers' | 'type' | 'privacy'>[];
      }
    | undefined
  > {
    const conditions = ['a.tenant_id = $1', 'a.parent_id = $2', liveAt('$3', 'a.')];
    const values: unknown[] = [tenantId, parentId, this.clock.now(), filter.readableUnder];
    conditions.push(
      'EXISTS (SELECT 1 FROM unnest(a.containers) c, unnest($4::text[]) r WHERE starts_with(c, r))',
    );
    if (filter.ids.length) {
      values.push(filter.ids);
      conditions.push(`a.child_id = ANY($${values.length}::text[])`);
    }
    if (filter.types.length) {
      values.push(filter.types);
      conditions.push(`a.type = ANY($${values.length}::text[])`);
    }
    type TargetRow = {
      parent_containers: string[];
      parent_type: TokenType;
      parent_privacy: TokenPrivacy | null;
      id: string | null;
      containers: string[];
      type: TokenType;
      privacy: TokenPrivacy | null;
    };
    return withTenant(this.appPool, tenantId, async (client) => {
      const result = await client.query<TargetRow>(
        `SELECT parent.containers AS parent_containers, parent.type AS parent_type,
                parent.privacy AS parent_privacy, child.id, child.containers, child.type, child.privacy
         FROM (SELECT containers, type, privacy FROM tokens WHERE tenant_id = $1 AND id = $2 AND ${liveAt('$3')}) parent
         LEFT JOIN LATERAL (
           SELECT t.id, t.containers, t.type, t.privacy, a.associated_at
           FROM token_associations a
           CROSS JOIN LATERAL (
             SELECT id, containers, type, privacy FROM tokens t
             WHERE t.tenant_id = $1 AND t.id = a.child_id LIMIT 1) t
           WHERE ${conditions.join(' AND ')}
         ) child ON true
         ORDER BY child.associated_at, child.id`,
        values,
      );
      const first = result.rows[0];
      if (!first) return undefined;
      return {
        parent: {
          containers: first.parent_containers,
          type: first.parent_type,
          privacy: first.parent_privacy,
        },
        children: result.rows.flatMap(({ id, containers, type, privacy }) =>
          id === null ? [] : [{ id, containers, type, privacy }],
        ),
      };
    });
  }

  /**
   * A page of a live parent's live children, by association time then id, with the parent's
   * containers (for the caller's permission check) in the same statement; undefined when the
   * parent is not a live token of the tenant. `readableUnder` limits the children to tokens with
   * a container under one of these paths; null means every container. Filtering and paging read
   * the association rows only; the page's children are then fetched by primary key, one lookup
   * each (a lateral join: with a plain join and stale statistics the planner hashed the tenant's
   * whole tokens table). The total: without an id or container filter, the kept counts of
   * children that never expire plus a live count of those with an expiry (see migration
   * tokens/008), otherwise a count of the matching association rows.
   */
  async children(
    tenantId: string,
    parentId: string,
    filter: { ids: string[]; types: string[]; readableUnder: string[] | null; page: number; size: number },
  ): Promise<
    { parent: Pick<TokenRow, 'containers' | 'type' | 'privacy'>; rows: TokenRow[]; total: number } | undefined
  > {
    const conditions = ['a.tenant_id = $1', 'a.parent_id = $2', liveAt('$3', 'a.')];
    const values: unknown[] = [tenantId, parentId, this.clock.now()];
    const add = (sql: (placeholder: string) => string, value: unknown) => {
      values.push(value);
      conditions.push(sql(`$${values.length}`));
    };
    let keptTypes = '';
    if (filter.ids.length) add((p) => `a.child_id = ANY(${p}::text[])`, filter.ids);
    if (filter.types.length === 1) {
      // Equality, not = ANY: only then does the type-led index give the page order.
      add((p) => `a.type = ${p}::text`, filter.types[0]);
      keptTypes = ` AND c.type = $${values.length}::text`;
    } else if (filter.types.length) {
      add((p) => `a.type = ANY(${p}::text[])`, filter.types);
      keptTypes = ` AND c.type = ANY($${values.length}::text[])`;
    }
    if (filter.readableUnder) {
      add(
        (p) =>
          `EXISTS (SELECT 1 FROM unnest(a.containers) c, unnest(${p}::text[]) r WHERE starts_with(c, r))`,
        filter.readableUnder,
      );
    }
    const where = conditions.join(' AND ');
    const total =
      filter.ids.length || filter.readableUnder
        ? `(SELECT count(*) FROM token_associations a WHERE ${where})`
        : `(SELECT coalesce(sum(c.children), 0) FROM token_child_counts c
             WHERE c.tenant_id = $1 AND c.parent_id = $2${keptTypes})
           + (SELECT count(*) FROM token_associations a WHERE ${where} AND a.expires_at IS NOT NULL)`;
    // One row per child, or one row of nulls past the last page; none without a live parent.
    type PageRow = TokenRow & {
      parent_containers: string[];
      parent_type: TokenType;
      parent_privacy: TokenPrivacy | null;
      total: number;
    };
    return withTenant(this.appPool, tenantId, async (client) => {
      const result = await client.query<PageRow>(
        `SELECT parent.containers AS parent_containers, parent.type AS parent_type,
                parent.privacy AS parent_privacy, child.*, (${total})::int AS total
         FROM (SELECT containers, type, privacy FROM tokens WHERE tenant_id = $1 AND id = $2 AND ${liveAt('$3')}) parent
         LEFT JOIN LATERAL (
           SELECT ${tokenWithKey('t')}, page.associated_at AS page_associated_at
           FROM (SELECT a.child_id, a.associated_at FROM token_associations a WHERE ${where}
                 ORDER BY a.associated_at, a.child_id
                 LIMIT ${filter.size} OFFSET ${(filter.page - 1) * filter.size}) page
           CROSS JOIN LATERAL (
             SELECT * FROM tokens t WHERE t.tenant_id = $1 AND t.id = page.child_id LIMIT 1) t
           ${withKeyOf('t')}
         ) child ON true
         ORDER BY child.page_associated_at, child.id`,
        values,
      );
      const first = result.rows[0];
      if (!first) return undefined;
      const rows = first.id === null ? [] : result.rows;
      return {
        parent: {
          containers: first.parent_containers,
          type: first.parent_type,
          privacy: first.parent_privacy,
        },
        rows,
        total: first.total,
      };
    });
  }

  /**
   * A page of the tenant's live tokens, newest first (created_at, then id, both descending), by
   * offset or after a cursor; one extra row tells whether there is a next page. `containers`
   * keeps tokens with a container under one of these paths; `readableUnder` does the same for
   * the key's rules (null: every container), `revealableUnder` for its revealing token:read rules
   * (a search by terms on data); `metadata` keeps tokens holding all these entries;
   * a search's `indexValues` keeps tokens holding each of these blind index values, `fingerprints`
   * those with one of these fingerprints, `created` those created in the range (either end open).
   */
  async list(tenantId: string, filter: TokenListFilter): Promise<{ rows: TokenRow[]; hasMore: boolean }> {
    const conditions = ['t.tenant_id = $1', liveAt('$2', 't.')];
    const values: unknown[] = [tenantId, this.clock.now()];
    const add = (sql: (placeholder: string) => string, value: unknown) => {
      values.push(value);
      conditions.push(sql(`$${values.length}`));
    };
    const under = (p: string) =>
      `EXISTS (SELECT 1 FROM unnest(t.containers) c, unnest(${p}::text[]) r WHERE starts_with(c, r))`;
    if (filter.types.length) add((p) => `t.type = ANY(${p}::text[])`, filter.types);
    if (filter.containers.length) add(under, filter.containers);
    if (filter.readableUnder) add(under, filter.readableUnder);
    if (filter.revealableUnder) add(under, filter.revealableUnder);
    if (filter.fingerprints?.length) add((p) => `t.fingerprint = ANY(${p}::text[])`, filter.fingerprints);
    if (filter.created?.from) add((p) => `t.created_at >= ${p}::timestamptz`, filter.created.from);
    if (filter.created?.to) add((p) => `t.created_at <= ${p}::timestamptz`, filter.created.to);
    // Newest first along tokens_newest_first; with a metadata filter, along one entry's
    // token_metadata_newest_first instead (the lookup table's B-tree, usable under row-level
    // security where jsonb @> on tokens.metadata is not): the page's tokens are joined by primary
    // key and the other entries checked on them.
    const [first, ...others] = Object.entries(filter.metadata).sort(([a], [b]) => (a < b ? -1 : 1));
    const [firstValue, ...otherValues] = [...new Set(filter.indexValues ?? [])];
    let from = 'tokens t';
    let sortKey = ['t.created_at', 't.id'];
    if (firstValue !== undefined) {
      // A search by blind index leads with one value's token_search_index_newest_first, as a
      // metadata filter leads with its entry; the other values are checked on the candidates
      // (text equality: leakproof, so the index is usable), the metadata entries on the candidate
      // rows themselves: one semi-join on token_metadata per entry cost 5.3 ms a search by index
      // and metadata at 1,000,000 tokens (2.4 planning it), this filter 1.9 (docs/performance.md).
      from = 'token_search_index s JOIN tokens t ON t.tenant_id = s.tenant_id AND t.id = s.token_id';
      sortKey = ['s.created_at', 's.token_id'];
      add((p) => `s.tenant_id = $1 AND s.value = ${p}`, firstValue);
      for (const value of otherValues) {
        add(
          (p) =>
            `EXISTS (SELECT 1 FROM token_search_index o WHERE o.tenant_id = $1 AND o.token_id = t.id AND o.value = ${p})`,
          value,
        );
      }
      if (first) add((p) => `t.metadata @> ${p}::jsonb`, JSON.stringify(filter.metadata));
    } else if (first) {
      from = 'token_metadata m JOIN tokens t ON t.tenant_id = m.tenant_id AND t.id = m.token_id';
      sortKey = ['m.created_at', 'm.token_id'];
      values.push(first[0], first[1]);
      conditions.push(`m.tenant_id = $1 AND m.key = $${values.length - 1} AND m.value = $${values.length}`);
      if (others.length) add((p) => `t.metadata @> ${p}::jsonb`, JSON.stringify(Object.fromEntries(others)));
    }
    if (filter.after) {
      values.push(filter.after.createdAt, filter.after.id);
      conditions.push(
        `(${sortKey.join(', ')}) < ($${values.length - 1}::timestamptz, $${values.length}::text)`,
      );
    }
    const orderBy = sortKey.map((column) => `${column} DESC`).join(', ');
    return withTenant(this.appPool, tenantId, async (client) => {
      // The keys are joined to the page only (a join below the LIMIT would run for every
      // candidate row a sort reads); created_at and id order it as the inner sort key does.
      const result = await client.query<TokenRow>(
        `SELECT ${tokenWithKey('page')}
         FROM (SELECT t.* FROM ${from} WHERE ${conditions.join(' AND ')}
               ORDER BY ${orderBy} LIMIT ${filter.size + 1} OFFSET ${filter.offset}) page
         ${withKeyOf('page')}
         ORDER BY page.created_at DESC, page.id DESC`,
        values,
      );
      return { rows: result.rows.slice(0, filter.size), hasMore: result.rows.length > filter.size };
    });
  }

  /**
   * A page of list() of only the rows `keep` keeps (the caller's read decision on each): the rows
   * are read batch by batch in the page order until the page and one more row are kept, so a row
   * kept out moves neither the page, its offset, its next cursor nor whether there is one: the
   * answer is the one a tenant without that row would get (docs/security.md, "Lists").
   */
  async listKept(
    tenantId: string,
    filter: TokenListFilter,
    keep: (row: TokenRow) => boolean,
  ): Promise<{ rows: TokenRow[]; hasMore: boolean }> {
    const wanted = filter.offset + filter.size + 1;
    // The first batch is what a page without kept-out rows needs (one more row than list() reads).
    const batch = Math.min(wanted, 500);
    const kept: TokenRow[] = [];
    let after = filter.after;
    for (;;) {
      const { rows, hasMore } = await this.list(tenantId, { ...filter, after, offset: 0, size: batch });
      kept.push(...rows.filter(keep));
      const last = rows.at(-1);
      if (kept.length >= wanted || !hasMore || !last) break;
      after = { createdAt: last.created_at.toISOString(), id: last.id };
    }
    const end = filter.offset + filter.size;
    return { rows: kept.slice(filter.offset, end), hasMore: kept.length > end };
  }

  /** The oldest live token with this fingerprint: what deduplication hands back. */
  async findByFingerprint(
    tenantId: string,
    type: TokenType,
    fingerprint: string,
    containers: string[],
    /** The token being updated, which is not a duplicate of itself. */
    exceptId?: string,
  ): Promise<TokenRow | undefined> {
    return withTenant(this.appPool, tenantId, async (client) => {
      const result = await client.query<TokenRow>(
        `SELECT ${tokenWithKey('t')} FROM tokens t ${withKeyOf('t')}
         WHERE t.tenant_id = $1 AND t.type = $2 AND t.fingerprint = $3 AND ${liveAt('$6', 't.')}
           AND t.containers @> $4::text[] AND t.containers <@ $4::text[] AND t.id IS DISTINCT FROM $5
         ORDER BY t.created_at, t.id LIMIT 1`,
        [tenantId, type, fingerprint, containers, exceptId ?? null, this.clock.now()],
      );
      return result.rows[0];
    });
  }
}
