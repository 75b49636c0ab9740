import { z } from 'zod';
import { cardBrands, cardDataIssues, cardFundings } from './cards.ts';
import { passesAbaChecksum, passesLuhn } from './checksums.ts';
import { containerPath, timestamp, uuid } from './common.ts';
import {
  containerOfPrivacy,
  privacyIssues,
  privacyResponseSchema,
  privacySchema,
  tokenMaskOrNullSchema,
  tokenMaskSchema,
  singleValueDataSchemas,
  tokenTypes,
  tokenTypeSchema,
  typePrivacy,
  type TokenType,
} from './token-types.ts';

export { tokenTypes, tokenTypeSchema, type TokenType } from './token-types.ts';

/** Where a token goes when its create names no containers nor privacy: its type's default privacy's container. */
export const defaultContainers = Object.fromEntries(
  tokenTypes.map((type) => [type, containerOfPrivacy(typePrivacy[type].defaults)]),
) as Record<TokenType, string>;

export const tokenId = z
  .string()
  .min(1)
  .max(200)
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._:~-]*$/,
    'Letters, digits and . _ : ~ - only, starting with a letter or digit',
  );

/**
 * A new token's id: a token id, or an alias expression on its data that draws one
 * (`{{ data | alias_preserve_format }}`, docs/search.md#alias-ids), which the create evaluates.
 */
export const newTokenId = z
  .string()
  .min(1)
  .max(200)
  .regex(
    /^(?:[A-Za-z0-9][A-Za-z0-9._:~-]*|\{\{[\s\S]*\}\})$/,
    'Letters, digits and . _ : ~ - only, starting with a letter or digit; or an alias expression, as {{ data | alias_preserve_format }}',
  )
  .describe(
    'The token’s id (default: a random UUID), or an alias expression that draws one at random in the data’s format: `{{ data | alias_preserve_format }}`, `{{ data | alias_preserve_length }}`, `{{ data.number | alias_card }}` (docs/search.md)',
  );

export const cardData = z.strictObject({
  number: z
    .string()
    .regex(/^\d{13,19}$/, { message: 'Must be 13 to 19 digits', abort: true })
    .refine(passesLuhn, 'Is not a valid card number (Luhn check)'),
  expiration_month: z.number().int().min(1).max(12),
  expiration_year: z.number().int().min(2000).max(2200),
  cvc: z
    .string()
    .regex(/^\d{3,4}$/, 'Must be 3 or 4 digits')
    .optional(),
});

export const bankData = z.strictObject({
  routing_number: z
    .string()
    .regex(/^\d{9}$/, { message: 'Must be 9 digits', abort: true })
    .refine(passesAbaChecksum, 'Is not a valid ABA routing number'),
  account_number: z.string().regex(/^\d{3,17}$/, 'Must be 3 to 17 digits'),
});

const dataSchemas: Partial<Record<TokenType, z.ZodType>> = {
  card: cardData,
  bank: bankData,
  ...singleValueDataSchemas,
};

export const metadataSchema = z
  .record(z.string().min(1).max(100), z.string().max(500, 'At most 500 characters'))
  .refine((map) => Object.keys(map).length <= 50, 'At most 50 entries');

export const tokenData = z.json({
  error: (issue) => (issue.input === undefined ? 'Required' : 'Must be JSON'),
});

/** At most this many search indexes on one token. */
export const maxSearchIndexes = 10;

const dataExpressionText = z
  .string()
  .min(1)
  .max(500)
  .regex(/^\{\{[\s\S]*\}\}$/, 'Must be one expression on data, as {{ data | filter }}')
  .meta({ examples: ['{{ data | last4 }}'] });

/**
 * A search index: an expression on the token's data (`{{ data.number | last4 }}`), evaluated at
 * each write and kept as a blind index (docs/search.md); the object form `{ expression, unique:
 * true }` also refuses a second token of the tenant with the same value.
 */
export const searchIndexSchema = z.union([
  dataExpressionText,
  z.strictObject({ expression: dataExpressionText, unique: z.boolean().optional() }),
]);
export type SearchIndex = z.output<typeof searchIndexSchema>;

const searchIndexesSchema = z
  .array(searchIndexSchema)
  .max(maxSearchIndexes, `At most ${maxSearchIndexes} search indexes`)
  .describe(
    'Expressions on the data (`{{ data.number | last4 }}`), each stored as a keyed HMAC of its value, never the value; `{ "expression": …, "unique": true }` also refuses a second token of the tenant with the same value (docs/search.md)',
  );

const fingerprintExpressionSchema = dataExpressionText.describe(
  'What counts as the same data for deduplication, as an expression on the data (`{{ data.email | downcase }}`); default: the type’s own (a card’s number, otherwise the whole data)',
);

export const createTokenBody = z
  .strictObject({
    id: newTokenId.optional(),
    type: tokenTypeSchema.default('token'),
    data: tokenData.refine((value) => value !== null, 'Must not be null'),
    metadata: metadataSchema.optional(),
    containers: z.array(containerPath).min(1).max(10).optional(),
    expires_at: timestamp
      .refine((value) => Date.parse(value) > Date.now(), 'Must be in the future')
      .optional(),
    deduplicate_token: z.boolean().optional(),
    search_indexes: searchIndexesSchema.optional(),
    fingerprint_expression: fingerprintExpressionSchema.optional(),
    mask: tokenMaskSchema.optional(),
    privacy: privacySchema
      .optional()
      .describe(
        'Classification, impact level and restriction policy; each left out takes the type’s default (docs/token-types.md). Without containers, the token goes in /<classification>/<impact_level>/.',
      ),
  })
  .superRefine((body, context) => {
    for (const issue of tokenDataIssues(body.type, body.data)) context.addIssue(issue);
    for (const issue of privacyIssues(body.type, body.privacy ?? {})) {
      context.addIssue({ code: 'custom', path: ['privacy', issue.field], message: issue.message });
    }
  });
export type CreateTokenBody = z.output<typeof createTokenBody>;

/**
 * What is wrong with `data` for a token of this type (card and bank data have a shape, the
 * single-value types a format), as issues on `data.<field>` (or `data`): a create checks its body
 * with it, an update the data its patch leads to. A card's expiry is checked against `now`.
 */
export function tokenDataIssues(type: TokenType, data: unknown, now = new Date()): z.core.$ZodRawIssue[] {
  const schema = dataSchemas[type];
  if (!schema) return [];
  const result = schema.safeParse(data);
  const issues = result.success
    ? []
    : result.error.issues.map(
        (issue) => ({ ...issue, path: ['data', ...issue.path] }) as z.core.$ZodRawIssue,
      );
  if (type === 'card') {
    for (const issue of cardDataIssues(data, now)) {
      issues.push({ code: 'custom', input: data, path: ['data', issue.field], message: issue.message });
    }
  }
  return issues;
}

/**
 * `PATCH /tokens/{id}`: a JSON merge patch (RFC 7396) of the token's editable fields. `null`
 * removes: a metadata key, all metadata, the expiry. `data` is merged into object data (nested,
 * `null` removing a key) and replaces anything else; it cannot be removed. `containers` replace.
 */
export const updateTokenBody = z.strictObject({
  data: tokenData.refine((value) => value !== null, 'Must not be null: data cannot be removed').optional(),
  metadata: z
    .record(z.string().min(1).max(100), z.string().max(500, 'At most 500 characters').nullable())
    .refine((map) => Object.keys(map).length <= 100, 'At most 100 entries')
    .nullable()
    .optional(),
  containers: z
    .array(containerPath)
    .min(1)
    .max(10)
    .optional()
    .describe(
      'Replaces the token’s containers. Needs token:update on every container before and after; another set than the token’s also needs token:read revealing the token on each of them (where a token is decides what other keys read of it), else 403 naming body.containers (docs/security.md, Authoring what others read)',
    ),
  expires_at: timestamp
    .refine((value) => Date.parse(value) > Date.now(), 'Must be in the future')
    .nullable()
    .optional(),
  search_indexes: searchIndexesSchema.nullable().optional(),
  fingerprint_expression: fingerprintExpressionSchema.nullable().optional(),
  deduplicate_token: z
    .boolean()
    .optional()
    .describe('Overrides the tenant’s deduplicate_tokens setting for this update'),
  mask: tokenMaskOrNullSchema
    .optional()
    .describe(
      'A new mask (checked against the data after the update; it sees at most the last four characters of each text or number, no boolean, no property name it does not spell, never a CVC); null returns the token to its type’s default mask. Either needs token:read revealing the token on its containers, as search_indexes and fingerprint_expression do, else 403 (docs/token-types.md, Masks)',
    ),
  privacy: privacySchema
    .optional()
    .describe(
      'A new impact level (not below the type’s lowest) or restriction policy; the classification cannot change (given, it must be the token’s). A token in its old privacy’s container (/pci/high/) moves to the new one (/pci/moderate/) unless containers are given; the key needs token:update on both, and for any change token:read revealing the token where it is and goes (the privacy decides what other keys read), else 403 naming body.privacy (docs/token-types.md, Privacy)',
    ),
});
export type UpdateTokenBody = z.output<typeof updateTokenBody>;

/**
 * A card's summary: no more of the number than PCI DSS lets show beside it (BIN and last four),
 * brand and funding from the BIN range table (cards.ts), and the expiry of a `card`.
 */
export const cardDetailsSchema = z.object({
  bin: z
    .string()
    .describe(
      'The first 8 digits of a number of 16 digits or more (the first 6 otherwise) where the key’s token:read decision reveals the token; the first 6 where it masks',
    ),
  last4: z.string(),
  brand: z.enum(cardBrands).optional().describe('Absent when no range of the table holds the number'),
  funding: z.enum(cardFundings).optional().describe('Known for well-known test BINs only; absent otherwise'),
  expiration_month: z.number().int().optional(),
  expiration_year: z.number().int().optional(),
});
export type CardDetails = z.output<typeof cardDetailsSchema>;

/** A bank account's summary: its routing number (public) and the last four of its account number. */
export const bankDetailsSchema = z.object({
  routing_number: z.string(),
  account_number_last4: z.string(),
});
export type BankDetails = z.output<typeof bankDetailsSchema>;

export const tokenParams = z.object({ id: tokenId });
export const parentParams = z.object({ parent_id: tokenId });
export const associationParams = z.object({ parent_id: tokenId, child_id: tokenId });

export const tokenSchema = z.object({
  id: z.string(),
  tenant_id: uuid,
  type: tokenTypeSchema,
  data: tokenData.optional(),
  containers: z.array(z.string()),
  metadata: z.record(z.string(), z.string()),
  fingerprint: z
    .string()
    .optional()
    .describe(
      'The HMAC of what makes its data equal: absent where the key’s token:read decision does not reveal the token (an equality test of guessed data otherwise)',
    ),
  expires_at: timestamp.optional(),
  created_by: uuid,
  created_at: timestamp,
  modified_by: uuid.optional(),
  modified_at: timestamp.optional(),
  privacy: privacyResponseSchema.describe('Its classification, impact level and restriction policy'),
  mask: z
    .json()
    .optional()
    .describe('Its mask expression: as given, else its type’s default; absent when it has neither'),
  card: cardDetailsSchema
    .optional()
    .describe(
      'A card’s summary (card and card_number tokens), with or without the data, as the key’s token:read decision allows (none where it redacts or the key may not read)',
    ),
  bank: bankDetailsSchema
    .optional()
    .describe(
      'A bank account’s summary (bank tokens), with or without the data, as the key’s token:read decision allows',
    ),
  search_indexes: z
    .array(z.union([z.string(), z.object({ expression: z.string(), unique: z.boolean().optional() })]))
    .optional()
    .describe('The search index expressions as given (never their values)'),
  fingerprint_expression: z.string().optional(),
});
export type TokenResponse = z.output<typeof tokenSchema>;

/**
 * A token as a write answers it (create, update, a child's create, a deduplicated create): never
 * its data, so that a write's answer may be kept under an Idempotency-Key.
 */
export const writtenTokenSchema = tokenSchema.omit({ data: true });

export const usageReportSchema = z.object({
  token_report: z.object({
    metrics_by_type: z.record(
      z.string(),
      z.object({ count: z.number().int(), last_created_at: timestamp.optional() }),
    ),
    included_monthly_active_tokens: z.number().int(),
    monthly_active_tokens: z.number().int(),
    daily_created_by_type: z
      .array(
        z.object({
          date: z.string().describe('A UTC day, YYYY-MM-DD'),
          counts: z.record(z.string(), z.number().int()).describe('Tokens created that day, by type'),
        }),
      )
      .describe('Tokens created per type on each of the last 30 UTC days, oldest first (today last)'),
  }),
});

/**
 * `GET /v2/tokens`'s page, as Basis Theory's v2 API and its Node SDK (`tokens.listV2`) shape
 * it: the page size and the cursor of the next page (`?start=`), absent on the last page.
 */
export const tokenCursorPageV2Schema = z.object({
  pagination: z.object({
    page_size: z.number().int(),
    next: z.string().optional().describe('The cursor of the next page (`?start=`); absent on the last page'),
  }),
  data: z.array(tokenSchema),
});

/** The most characters a search query may have. */
const maxQueryLength = 4_000;

const searchQuery = z
  .string()
  .max(maxQueryLength)
  .default('')
  .describe(
    'Terms `field:value` joined by AND (values quoted when they hold spaces): `data` (any search index of that value), `metadata.<key>`, `type`, `container`, `fingerprint`, `created_at:[<from> TO <to>]` (docs/search.md); empty: every token',
  );

/** `POST /v2/tokens/search`, as Basis Theory's v2 (node-sdk `tokens.searchV2`): a cursor. */
export const searchTokensV2Body = z.strictObject({
  query: searchQuery,
  size: z.number().int().min(1).max(100).default(20),
  start: z.string().min(1).max(400).optional().describe('The cursor of a previous page’s pagination.next'),
});

/** `POST /tokens/search`, as Basis Theory's first search: pages. */
export const searchTokensBody = z.strictObject({
  query: searchQuery,
  page: z.number().int().min(1).default(1),
  size: z.number().int().min(1).max(100).default(20),
});

/**
 * POST /tokenize: the caller's own JSON (an object or an array), a token request (a create's body)
 * wherever an object has both `type` and `data`; at most 100 of them.
 */
export const tokenizeBody = z
  .union([z.record(z.string(), z.unknown()), z.array(z.unknown())])
  .describe(
    'Any JSON object or array; each object with both `type` and `data` is a token request (the body of POST /tokens), answered in its place by the token. At most 100 token requests, all created in one append or none.',
  );

/** Its answer: the same shape, each token request replaced by its token (never its data). */
export const tokenizeResponseSchema = z
  .union([z.record(z.string(), z.unknown()), z.array(z.unknown())])
  .describe('The body as sent, each token request replaced by its token (without data)');

/** POST /detokenize: any JSON with `{{ <token id> | filters }}` expressions in its strings (at most 100 tokens). */
export const detokenizeBody = z
  .union([z.record(z.string(), z.unknown()), z.array(z.unknown())])
  .describe(
    'Any JSON object or array whose strings hold `{{ <token id> }}` expressions (filters allowed, at most 100 distinct tokens); each is answered with the token’s data as the caller’s rules show it (its mask, or null when redacted).',
  );

export const detokenizeResponseSchema = z
  .union([z.record(z.string(), z.unknown()), z.array(z.unknown())])
  .describe('The body as sent, every expression replaced by what it renders');

/** How long a token intent holds its data at most: then it expires and its key is shredded. */
export const tokenIntentLifetimeMs = 24 * 60 * 60_000;

/**
 * `POST /token-intents`, as Basis Theory's `CreateTokenIntentRequest`: data of a token type,
 * checked as a token of that type would be (card and bank checks), held sealed until it is made a
 * token (`POST /tokens { token_intent_id }`), deleted, or expires 24 hours after its creation
 * (`CARD_CVC_TTL_SECONDS` after it when the data holds a card's CVC).
 */
export const createTokenIntentBody = z
  .strictObject({
    type: tokenTypeSchema,
    data: tokenData.refine((value) => value !== null, 'Must not be null'),
  })
  .superRefine((body, context) => {
    for (const issue of tokenDataIssues(body.type, body.data)) context.addIssue(issue);
  });
export type CreateTokenIntentBody = z.output<typeof createTokenIntentBody>;

export const tokenIntentParams = z.object({ id: uuid });

/** A token intent as Basis Theory's `TokenIntent` shapes it: never its data. */
export const tokenIntentSchema = z.object({
  id: uuid,
  tenant_id: uuid,
  type: tokenTypeSchema,
  fingerprint: z
    .string()
    .optional()
    .describe(
      'The fingerprint a token of this data would have (its type’s default): in the answer of the create only (a later read would answer a guess of the data)',
    ),
  created_by: uuid,
  created_at: timestamp,
  expires_at: timestamp.describe(
    'When it expires and its data is shredded: 24 hours after its creation, or as long as a card’s CVC may be kept when the data holds one (CARD_CVC_TTL_SECONDS, an hour by default)',
  ),
  card: cardDetailsSchema
    .optional()
    .describe(
      'A card’s summary (card and card_number intents): the BIN as the create computed it in the create’s answer, its first six digits in any later read',
    ),
  bank: bankDetailsSchema.optional().describe('A bank account’s summary (bank intents)'),
});
export type TokenIntentResponse = z.output<typeof tokenIntentSchema>;

/**
 * `POST /tokens`'s body: a create (createTokenBody), or, with `token_intent_id`, a token made of
 * an intent's type and data (neither given then), which consumes the intent.
 */
export const createTokenRequestBody = z
  .strictObject({
    ...createTokenBody.shape,
    type: tokenTypeSchema.optional(),
    data: tokenData.optional(),
    token_intent_id: uuid
      .optional()
      .describe(
        'A token intent of the tenant (POST /token-intents) whose type and data the token takes; the intent is consumed, its data shredded. With search_indexes, fingerprint_expression, mask or an alias id the key needs token:read revealing the token on its containers, else 403 (docs/token-intents.md)',
      ),
  })
  .superRefine((body, context) => {
    if (body.token_intent_id !== undefined) {
      for (const field of ['type', 'data'] as const) {
        if (body[field] !== undefined) {
          context.addIssue({
            code: 'custom',
            path: [field],
            message: `Leave ${field} out with token_intent_id: the token takes the intent’s`,
          });
        }
      }
      return;
    }
    const plain = createTokenBody.safeParse(body);
    if (plain.success) return;
    // The issues as they are (their codes too): the error handler names a missing field Required.
    for (const issue of plain.error.issues) context.addIssue({ ...issue });
  });
export type CreateTokenRequestBody = z.output<typeof createTokenRequestBody>;
