import { z } from 'zod';
import { passesAbaChecksum, passesLuhn } from './checksums.ts';
import { containerPath, timestamp, uuid } from './common.ts';

export const tokenTypes = ['token', 'card', 'bank'] as const;
export type TokenType = (typeof tokenTypes)[number];
export const tokenTypeSchema = z.enum(tokenTypes);

export const defaultContainers: Record<TokenType, string> = {
  token: '/general/high/',
  card: '/pci/high/',
  bank: '/bank/high/',
};

export const tokenId = z
  .string()
  .min(1)
  .max(200)
  .regex(
    /^[A-Za-z0-9][A-Za-z0-9._:~-]*$/,
    'Letters, digits and . _ : ~ - only, starting with a letter or digit',
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

const dataSchemas: Partial<Record<TokenType, z.ZodType>> = { card: cardData, bank: bankData };

export const metadataSchema = z
  .record(z.string().min(1).max(100), z.string().max(500, 'At most 500 characters'))
  .refine((map) => Object.keys(map).length <= 50, 'At most 50 entries');

export const tokenData = z.json({
  error: (issue) => (issue.input === undefined ? 'Required' : 'Must be JSON'),
});

export const createTokenBody = z
  .strictObject({
    id: tokenId.optional(),
    type: tokenTypeSchema.default('token'),
    data: tokenData.refine((value) => value !== null, 'Must not be null'),
    metadata: metadataSchema.optional(),
    containers: z.array(containerPath).min(1).max(10).optional(),
    expires_at: timestamp
      .refine((value) => Date.parse(value) > Date.now(), 'Must be in the future')
      .optional(),
    deduplicate_token: z.boolean().optional(),
  })
  .superRefine((body, context) => {
    for (const issue of tokenDataIssues(body.type, body.data)) context.addIssue(issue);
  });
export type CreateTokenBody = z.output<typeof createTokenBody>;

/**
 * What is wrong with `data` for a token of this type (card and bank data have a shape), as issues
 * on `data.<field>`: a create checks its body with it, an update the data its patch leads to.
 */
export function tokenDataIssues(type: TokenType, data: unknown): z.core.$ZodRawIssue[] {
  const schema = dataSchemas[type];
  if (!schema) return [];
  const result = schema.safeParse(data);
  if (result.success) return [];
  return result.error.issues.map(
    (issue) => ({ ...issue, path: ['data', ...issue.path] }) as z.core.$ZodRawIssue,
  );
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
  containers: z.array(containerPath).min(1).max(10).optional(),
  expires_at: timestamp
    .refine((value) => Date.parse(value) > Date.now(), 'Must be in the future')
    .nullable()
    .optional(),
});
export type UpdateTokenBody = z.output<typeof updateTokenBody>;

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
  fingerprint: z.string(),
  expires_at: timestamp.optional(),
  created_by: uuid,
  created_at: timestamp,
  modified_by: uuid.optional(),
  modified_at: timestamp.optional(),
});
export type TokenResponse = z.output<typeof tokenSchema>;

export const usageReportSchema = z.object({
  token_report: z.object({
    metrics_by_type: z.record(
      z.string(),
      z.object({ count: z.number().int(), last_created_at: timestamp.optional() }),
    ),
    included_monthly_active_tokens: z.number().int(),
    monthly_active_tokens: z.number().int(),
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
