import type { DataOf, DomainEvent } from '@tokenvault/cqrs';
import type {
  CardBrand,
  CardFunding,
  Classification,
  ImpactLevel,
  RestrictionPolicy,
  TokenMask,
  TokenType,
} from '@tokenvault/contracts';

// The facts the tokens context records, each payload written out in full: a change to the
// decider's state (domain/token.ts) must not change what is stored or published.

/**
 * A token's events, all in its own stream. Associations are kept in the CHILD's stream, so that
 * creating a child and its association is one event, and every association of a token as a
 * child is known exactly from its own history.
 */
export type TokenEvent =
  /** The whole token as created, its data sealed. */
  | DomainEvent<
      'TokenCreated',
      {
        token_id: string;
        tenant_id: string;
        type: TokenType;
        /** AES-256-GCM under the tenant's data key, bound to tenant and token id. */
        data_ciphertext: string;
        containers: string[];
        metadata: Record<string, string>;
        fingerprint: string;
        expires_at?: string;
        created_by: string;
        created_at: string;
        /** Set when the token was created as a child: its first association, made in the same event. */
        parent_id?: string;
        /** Created while its tenant deduplicates: it holds the claim on its data (domain/uniqueness.ts). */
        deduplicated?: true;
        /** The expired token whose claim on the same data it takes over. */
        claim_taken_from?: string;
        /** As the create gave it over the type's defaults; absent in events from before privacy (the defaults). */
        privacy?: {
          classification: Classification;
          impact_level: ImpactLevel;
          restriction_policy: RestrictionPolicy;
        };
        /** Its mask expression as the create gave it (plain: an expression, not data); absent: the type's default. */
        mask?: TokenMask;
        /** A card's summary, derived from the data by the command (never more than BIN and last four). */
        card?: CardSummary;
        /** A bank account's summary, derived from the data by the command. */
        bank?: BankSummary;
        /** When the CVC the data holds is removed (TokenCvcRemoved); absent: it holds none. */
        cvc_expires_at?: string;
      } & TokenSearchFields
    >
  /** The token's editable state after the change (data sealed, like TokenCreated's). */
  | DomainEvent<
      'TokenUpdated',
      {
        token_id: string;
        tenant_id: string;
        type: TokenType;
        /** The data sealed again when it changed; the same ciphertext when it did not. */
        data_ciphertext: string;
        fingerprint: string;
        containers: string[];
        metadata: Record<string, string>;
        /** Absent: the token does not expire (any earlier expiry was removed). */
        expires_at?: string;
        /**
         * Set when the data or containers changed: the token gives up its claim on the old data
         * (`released`), or moves it to the new data while its tenant deduplicates (`moved`); see
         * domain/uniqueness.ts.
         */
        data_claim?: 'released' | 'moved';
        modified_by: string;
        modified_at: string;
        /**
         * When the token was created (an update never changes it): the monthly active tokens
         * count an update in the creation's month as the creation. Absent in events from before it.
         */
        created_at?: string;
        /** Its mask expression after the update; absent: the type's default. */
        mask?: TokenMask;
        /**
         * Its privacy after the update, when the update changed it (absent: as before; the
         * classification never changes).
         */
        privacy?: {
          classification: Classification;
          impact_level: ImpactLevel;
          restriction_policy: RestrictionPolicy;
        };
        /** The summaries of the data after the update (absent in events from before them). */
        card?: CardSummary;
        bank?: BankSummary;
        /** When the CVC the data holds after the update is removed; absent: it holds none. */
        cvc_expires_at?: string;
        /**
         * Set when the values of the token's unique search indexes changed: it gives up its
         * claims on the old ones and claims the new ones (domain/tokens.uniqueness.ts).
         */
        index_claims?: true;
      } & TokenSearchFields
    >
  | DomainEvent<
      'TokenAssociated',
      {
        tenant_id: string;
        parent_id: string;
        child_id: string;
        type: TokenType;
        /** The child's containers and expiry, which child lists filter on. */
        containers: string[];
        expires_at?: string;
        associated_by: string;
        associated_at: string;
      }
    >
  | DomainEvent<
      'TokenDissociated',
      {
        tenant_id: string;
        parent_id: string;
        child_id: string;
        type: TokenType;
        dissociated_by: string;
        dissociated_at: string;
      }
    >
  /**
   * The token's data sealed again under a new token key (its old key, thought compromised, is
   * destroyed with this append): the same data, a new ciphertext; nothing else changes.
   */
  | DomainEvent<
      'TokenReencrypted',
      {
        token_id: string;
        tenant_id: string;
        type: TokenType;
        data_ciphertext: string;
        reencrypted_by: string;
        reencrypted_at: string;
      }
    >
  /**
   * A card's CVC removed from its data, CARD_CVC_TTL_SECONDS after it was given: the data without
   * it sealed under a new token key (the old key, which sealed every earlier ciphertext, is
   * destroyed with this append), and what the token derives from its data recomputed from the
   * data without it (`derived`); metadata, containers, privacy and mask do not change.
   */
  | DomainEvent<
      'TokenCvcRemoved',
      {
        token_id: string;
        tenant_id: string;
        type: TokenType;
        data_ciphertext: string;
        removed_at: string;
        /** Absent in events from before it: then nothing derived changed (search fields stayed). */
        derived?: DerivedFromData;
      }
    >
  | DomainEvent<
      'TokenDeleted',
      {
        token_id: string;
        tenant_id: string;
        type: TokenType;
        /** The associations the deletion ends: as a child (exact) and as a parent (as listed then). */
        parent_ids: string[];
        child_ids: string[];
        deleted_by: string;
        deleted_at: string;
      }
    >;

/** A search index as events record it: its expression, and whether its value is unique in the tenant. */
export interface SearchIndexSpec {
  expression: string;
  unique?: true;
}

/**
 * How a token is found and deduplicated, as its create or last update set it (each absent: none,
 * or the type's default fingerprint). Values are blind indexes (HMAC-SHA256 under the tenant's
 * search key), never the values themselves.
 */
export interface TokenSearchFields {
  search_indexes?: SearchIndexSpec[];
  /** The distinct blind values of every search index that gave a value for the data. */
  search_index_values?: string[];
  /** The distinct blind values of the unique search indexes: the token claims each. */
  unique_index_values?: string[];
  fingerprint_expression?: string;
}

/**
 * Everything a token derives from its data, as a field's removal (TokenCvcRemoved) recomputes it
 * from the data left (docs/token-types.md, "Data derived from a removed field"), held in full: an
 * absent field is none. A search index whose expression now fails is gone from `search_indexes`;
 * one that gives nothing indexes nothing; a fingerprint expression that fails or gives nothing is
 * gone, and the fingerprint is the type's own again.
 */
export interface DerivedFromData extends TokenSearchFields {
  fingerprint: string;
  card?: CardSummary;
  bank?: BankSummary;
  /** The fingerprint changed: the token gives up its claim on its old data (domain/tokens.uniqueness.ts). */
  data_claim?: 'released';
  /** The unique index values changed: the token gives up its claims on the old ones and claims these. */
  index_claims?: true;
}

/** A card's summary as events record it: no more of the number than its BIN and last four digits. */
export interface CardSummary {
  bin: string;
  last4: string;
  brand?: CardBrand;
  funding?: CardFunding;
  expiration_month?: number;
  expiration_year?: number;
}

/** A bank account's summary as events record it: the (public) routing number, the account's last four. */
export interface BankSummary {
  routing_number: string;
  account_number_last4: string;
}

/** What an update sets: the token's editable state after it, in full. */
export type TokenUpdate = DataOf<TokenEvent, 'TokenUpdated'>;

/**
 * A read of one token's data, as events written before TokensRead existed record it: still
 * projected, no longer appended.
 */
export type TokenReadEvent = DomainEvent<
  'TokenRead',
  { token_id: string; tenant_id: string; type: TokenType; read_by: string; read_at: string }
>;

/** At most this many tokens in one TokensRead (a page holds at most 100). */
export const maxTokensPerRead = 100;

/**
 * The tokens whose data one request read, as events written before TokensReadBatch record it:
 * still projected (the audit log has a `read` row for each, and the monthly active tokens count
 * each), no longer appended.
 */
export type TokensReadEvent = DomainEvent<
  'TokensRead',
  {
    tenant_id: string;
    /** `transform`: what the read showed when its rule masked or redacted the data (absent: the data). */
    tokens: { token_id: string; type: TokenType; transform?: 'mask' | 'redact' }[];
    read_by: string;
    read_at: string;
  }
>;

/**
 * The reads that committed together, of any tenants, as one record appended before any of their
 * data is returned (docs/decisions.md, "Reads without an event each"). Each read keeps what a
 * TokensRead held and what its metadata said: its tenant, its reader and its request. The
 * event's own metadata names no tenant (readsTenantId): every consumer takes each read's tenant
 * from the read.
 */
export type TokensReadBatchEvent = DomainEvent<'TokensReadBatch', { reads: TokenReadRecord[] }>;

/** One request's read in a TokensReadBatch. */
export interface TokenReadRecord {
  tenant_id: string;
  /**
   * At most maxTokensPerRead; a request that read more is recorded as several reads. Each with
   * when the token was created: the monthly active tokens count a read in the creation's month as
   * the creation (absent in events from before it).
   */
  tokens: (DataOf<TokensReadEvent, 'TokensRead'>['tokens'][number] & { created_at?: string })[];
  read_by: string;
  reader_type: 'application' | 'user' | 'system';
  correlation_id: string;
  read_at: string;
}

/**
 * At most this many tokens in one TokensReadBatch, all its reads together: the audit log numbers
 * an event's rows below 128 (its `rowsPerEvent`). More reads committing together are several
 * events of one append.
 */
export const maxTokensPerReadBatch = 128;

/** The metadata tenant of a TokensReadBatch: none of the tenants it names (the nil UUID). */
export const readsTenantId = '00000000-0000-0000-0000-000000000000';

/**
 * A token intent's events, in its own stream: data collected (often in a browser, with a public
 * key), checked and held sealed under a key of its own until it becomes a token, is deleted, or
 * expires. Its key is destroyed with each of the last three (docs/token-intents.md).
 */
export type TokenIntentEvent =
  | DomainEvent<
      'TokenIntentCreated',
      {
        intent_id: string;
        tenant_id: string;
        type: TokenType;
        /** AES-256-GCM under the intent's own key (wrapped by the tenant's data key), bound to tenant and intent. */
        data_ciphertext: string;
        /** The fingerprint a token of the data would have (its type's default). */
        fingerprint: string;
        card?: CardSummary;
        bank?: BankSummary;
        /**
         * At most 24 hours after created_at, and no later than `cvc_expires_at`: then the intent
         * expires and its key is destroyed.
         */
        expires_at: string;
        /**
         * When the card's CVC the data holds must go (CARD_CVC_TTL_SECONDS after created_at): the
         * intent expires then, and a token made of it removes the CVC then. Absent: it holds none
         * (or the intent is from before intents kept to it).
         */
        cvc_expires_at?: string;
        created_by: string;
        created_at: string;
      }
    >
  /** Made a token (in the same append as the token's TokenCreated): the intent's key is destroyed. */
  | DomainEvent<
      'TokenIntentConverted',
      {
        intent_id: string;
        tenant_id: string;
        type: TokenType;
        token_id: string;
        converted_by: string;
        converted_at: string;
      }
    >
  | DomainEvent<
      'TokenIntentDeleted',
      { intent_id: string; tenant_id: string; type: TokenType; deleted_by: string; deleted_at: string }
    >
  /** Its expiry passed before it was converted or deleted: the sweep destroyed its key. */
  | DomainEvent<
      'TokenIntentExpired',
      { intent_id: string; tenant_id: string; type: TokenType; expired_at: string }
    >;

/** Every event this context appends (or appended). */
export type TokensContextEvent =
  TokenEvent | TokenReadEvent | TokensReadEvent | TokensReadBatchEvent | TokenIntentEvent;

export const tokenStream = (tenantId: string, tokenId: string) => `tokens.token-${tenantId}-${tokenId}`;

export const tokenIntentStream = (tenantId: string, intentId: string) =>
  `tokens.intent-${tenantId}-${intentId}`;

/**
 * Reads go to a few streams shared by every tenant (each event names its tenant), so that
 * concurrent read-audit appends neither queue on one stream nor multiply with the tenants.
 */
export const tokenReadsStream = (shard: number) => `tokens.reads-${shard}`;

/** Every event type of this context; `satisfies` fails to compile when one is missing or extra. */
export const tokenEventTypes = Object.keys({
  TokenCreated: true,
  TokenUpdated: true,
  TokenAssociated: true,
  TokenDissociated: true,
  TokenDeleted: true,
  TokenReencrypted: true,
  TokenCvcRemoved: true,
  TokenRead: true,
  TokensRead: true,
  TokensReadBatch: true,
  TokenIntentCreated: true,
  TokenIntentConverted: true,
  TokenIntentDeleted: true,
  TokenIntentExpired: true,
} satisfies Record<TokensContextEvent['type'], true>) as TokensContextEvent['type'][];
