import { z } from 'zod';
import { passesAbaChecksum, passesLuhn } from './checksums.ts';

// What each token type is, beside the shape of its data: its privacy (classification, impact
// level, restriction policy) and the container derived from it, and the validation of the single-
// value types. The card and bank shapes are in tokens.schemas.ts. docs/token-types.md.

export const tokenTypes = [
  'token',
  'card',
  'bank',
  'card_number',
  'us_bank_account_number',
  'us_bank_routing_number',
  'social_security_number',
  'employer_id_number',
] as const;
export type TokenType = (typeof tokenTypes)[number];
export const tokenTypeSchema = z.enum(tokenTypes);

export const classifications = ['general', 'bank', 'pci', 'pii'] as const;
export type Classification = (typeof classifications)[number];
/** NIST's impact levels, lowest first. */
export const impactLevels = ['low', 'moderate', 'high'] as const;
export type ImpactLevel = (typeof impactLevels)[number];
/**
 * What a read gets when the caller's access to the token masks or redacts it without naming how:
 * the token's mask (`mask`), or no data (`redact`).
 */
export const restrictionPolicies = ['mask', 'redact'] as const;
export type RestrictionPolicy = (typeof restrictionPolicies)[number];

export interface TokenPrivacy {
  classification: Classification;
  impact_level: ImpactLevel;
  restriction_policy: RestrictionPolicy;
}

/** `privacy` as a create gives it: any part may be left to the type's default. */
export const privacySchema = z.strictObject({
  classification: z.enum(classifications).optional(),
  impact_level: z.enum(impactLevels).optional(),
  restriction_policy: z.enum(restrictionPolicies).optional(),
});
export type PrivacyInput = z.output<typeof privacySchema>;

export const privacyResponseSchema = z.object({
  classification: z.enum(classifications),
  impact_level: z.enum(impactLevels),
  restriction_policy: z.enum(restrictionPolicies),
});

interface TypePrivacy {
  /** What a token of the type gets when its create names no privacy. */
  defaults: TokenPrivacy;
  /** The lowest impact level a create may give it. */
  minimumImpactLevel: ImpactLevel;
  /** Only a `token` may hold any class of data; the others' data is of their class by definition. */
  fixedClassification: boolean;
}

/** Basis Theory's defaults per type (docs/token-types.md). */
export const typePrivacy: Record<TokenType, TypePrivacy> = {
  token: {
    defaults: { classification: 'general', impact_level: 'high', restriction_policy: 'redact' },
    minimumImpactLevel: 'low',
    fixedClassification: false,
  },
  card: {
    defaults: { classification: 'pci', impact_level: 'high', restriction_policy: 'mask' },
    minimumImpactLevel: 'high',
    fixedClassification: true,
  },
  bank: {
    defaults: { classification: 'bank', impact_level: 'high', restriction_policy: 'mask' },
    minimumImpactLevel: 'high',
    fixedClassification: true,
  },
  card_number: {
    defaults: { classification: 'pci', impact_level: 'high', restriction_policy: 'mask' },
    minimumImpactLevel: 'high',
    fixedClassification: true,
  },
  us_bank_account_number: {
    defaults: { classification: 'bank', impact_level: 'high', restriction_policy: 'mask' },
    minimumImpactLevel: 'high',
    fixedClassification: true,
  },
  us_bank_routing_number: {
    defaults: { classification: 'bank', impact_level: 'low', restriction_policy: 'mask' },
    minimumImpactLevel: 'low',
    fixedClassification: true,
  },
  social_security_number: {
    defaults: { classification: 'pii', impact_level: 'high', restriction_policy: 'mask' },
    minimumImpactLevel: 'high',
    fixedClassification: true,
  },
  employer_id_number: {
    defaults: { classification: 'pii', impact_level: 'high', restriction_policy: 'mask' },
    minimumImpactLevel: 'low',
    fixedClassification: true,
  },
};

/**
 * A token's mask: an expression on its data (`{{ data.number | reveal_last: 4 }}`), or an object
 * or array of expressions mirroring the data. What a read the deciding rule masks shows in place
 * of the data (docs/token-types.md, "Masks").
 */
export type TokenMask = string | TokenMask[] | { [field: string]: TokenMask };

const maskLimits = { depth: 5, entries: 50, length: 1_000 };
const isMaskShape = (value: unknown, depth = 0): boolean => {
  if (typeof value === 'string') return value.length <= maskLimits.length;
  if (depth >= maskLimits.depth || typeof value !== 'object' || value === null) return false;
  const entries = Object.values(value);
  return entries.length <= maskLimits.entries && entries.every((entry) => isMaskShape(entry, depth + 1));
};

export const tokenMaskSchema = z
  .json()
  .refine(isMaskShape, {
    message:
      'Must be a mask expression ({{ data | reveal_last: 4 }}), or an object or array of them mirroring the data',
  })
  .transform((mask) => mask as TokenMask)
  .describe(
    'An expression on the token’s data, or an object or array of them mirroring it; what a read its rule masks shows in place of the data',
  );

/** An update's `mask`: a new one, or `null` to return to the type's default (one JSON schema: any JSON). */
export const tokenMaskOrNullSchema = z
  .json()
  .refine((value) => value === null || isMaskShape(value), {
    message:
      'Must be a mask expression ({{ data | reveal_last: 4 }}), an object or array of them mirroring the data, or null (the type’s default)',
  })
  .transform((mask) => mask as TokenMask | null);

/** Basis Theory's default masks: a type without one is redacted where a rule masks it. */
export const defaultMasks: Partial<Record<TokenType, TokenMask>> = {
  card: {
    number: '{{ data.number | reveal_last: 4 }}',
    expiration_month: '{{ data.expiration_month }}',
    expiration_year: '{{ data.expiration_year }}',
  },
  bank: {
    routing_number: '{{ data.routing_number }}',
    account_number: '{{ data.account_number | reveal_last: 4 }}',
  },
  card_number: '{{ data | reveal_last: 4 }}',
  us_bank_account_number: '{{ data | reveal_last: 4 }}',
  social_security_number: '{{ data | reveal_last: 4 }}',
};

/** A token's privacy: what its create gave (or, for tokens from before privacy, nothing) over its type's defaults. */
export const privacyOf = (type: TokenType, given?: PrivacyInput | null): TokenPrivacy => ({
  ...typePrivacy[type].defaults,
  ...Object.fromEntries(Object.entries(given ?? {}).filter(([, value]) => value !== undefined)),
});

/** The container a token goes in when its create names none: `/<classification>/<impact_level>/`. */
export const containerOfPrivacy = (privacy: Pick<TokenPrivacy, 'classification' | 'impact_level'>) =>
  `/${privacy.classification}/${privacy.impact_level}/`;

/** What is wrong with a create's `privacy` for a token of this type, by field of `privacy`. */
export function privacyIssues(type: TokenType, given: PrivacyInput): { field: string; message: string }[] {
  const rules = typePrivacy[type];
  const issues: { field: string; message: string }[] = [];
  if (
    rules.fixedClassification &&
    given.classification !== undefined &&
    given.classification !== rules.defaults.classification
  ) {
    issues.push({
      field: 'classification',
      message: `Must be ${rules.defaults.classification} for a ${type} token (or left out)`,
    });
  }
  if (
    given.impact_level !== undefined &&
    impactLevels.indexOf(given.impact_level) < impactLevels.indexOf(rules.minimumImpactLevel)
  ) {
    issues.push({
      field: 'impact_level',
      message: `Must be ${rules.minimumImpactLevel} or higher for a ${type} token`,
    });
  }
  return issues;
}

/** Digits only, as a single-value type's data is given. */
const digits = (type: string, pattern: RegExp, what: string) =>
  z
    .string({ error: `Must be a string: the ${type} as text` })
    .regex(pattern, { message: `Must be ${what}`, abort: true });

/** Area 000, 666 and 900–999, group 00 and serial 0000 are never issued. */
const socialSecurityNumber = z
  .string({ error: 'Must be a string: NNN-NN-NNNN or 9 digits' })
  .regex(/^(\d{3}-\d{2}-\d{4}|\d{9})$/, { message: 'Must be NNN-NN-NNNN or 9 digits', abort: true })
  .superRefine((value, context) => {
    const plain = value.replaceAll('-', '');
    const area = plain.slice(0, 3);
    if (area === '000' || area === '666' || area.startsWith('9')) {
      context.addIssue({
        code: 'custom',
        message:
          'Is not a valid social security number: the area number (first 3 digits) is never 000, 666 or 900–999',
      });
    }
    if (plain.slice(3, 5) === '00') {
      context.addIssue({
        code: 'custom',
        message: 'Is not a valid social security number: the group number (digits 4–5) is never 00',
      });
    }
    if (plain.slice(5) === '0000') {
      context.addIssue({
        code: 'custom',
        message: 'Is not a valid social security number: the serial number (last 4 digits) is never 0000',
      });
    }
  });

/**
 * The prefixes the IRS assigns to employer identification numbers (its campuses' and the
 * internet's); 00, 07–09, 17–19, 28, 29, 49, 69, 70, 78, 79, 89, 96 and 97 are never assigned.
 */
export const employerIdPrefixes: ReadonlySet<string> = new Set(
  ['01-06', '10-16', '20-27', '30-48', '50-68', '71-77', '80-88', '90-95', '98-99'].flatMap((span) => {
    const [from, to] = span.split('-').map(Number) as [number, number];
    return Array.from({ length: to - from + 1 }, (_, index) => String(from + index).padStart(2, '0'));
  }),
);

const employerIdNumber = z
  .string({ error: 'Must be a string: NN-NNNNNNN or 9 digits' })
  .regex(/^(\d{2}-\d{7}|\d{9})$/, { message: 'Must be NN-NNNNNNN or 9 digits', abort: true })
  .refine((value) => employerIdPrefixes.has(value.slice(0, 2)), {
    message:
      'Is not a valid employer identification number: the IRS assigns no EIN with this prefix (first 2 digits)',
  });

/** The data of the single-value types: a string each, checked as its type says. */
export const singleValueDataSchemas = {
  card_number: digits('card number', /^\d{13,19}$/, '13 to 19 digits').refine(
    passesLuhn,
    'Is not a valid card number (Luhn check)',
  ),
  us_bank_account_number: digits('account number', /^\d{3,17}$/, '3 to 17 digits'),
  us_bank_routing_number: digits('routing number', /^\d{9}$/, '9 digits').refine(
    passesAbaChecksum,
    'Is not a valid ABA routing number (checksum)',
  ),
  social_security_number: socialSecurityNumber,
  employer_id_number: employerIdNumber,
} satisfies Partial<Record<TokenType, z.ZodType>>;
