import { z } from 'zod';
import { accessTransformSchema } from './access-rules.ts';
import { displayName, timestamp, uuid } from './common.ts';
import {
  permissionDescriptions,
  permissions,
  permissionSchema,
  tokenPermissionSchema,
  type Permission,
} from './permissions.schemas.ts';

export const applicationTypes = ['private', 'public', 'management'] as const;
export type ApplicationType = (typeof applicationTypes)[number];

/** A rule's container: a container path, or `/` for every container. */
export const ruleContainer = z
  .string()
  .max(200)
  .regex(/^\/([A-Za-z0-9_-]+\/)*$/, 'Must be / or look like /segment/segment/ (letters, digits, _ and -)')
  .meta({ examples: ['/pci/'] })
  .transform((path) => path.toLowerCase());

/**
 * Basis Theory's `AccessRule` (without `conditions`, which belong to its element sessions):
 * evaluated by priority, 1 first (ties keep their order in the array); the first rule whose
 * container covers the token and which holds the permission decides, and its transform says what
 * of the data a read shows (docs/applications.md, "Access rules").
 */
export const accessRuleSchema = z.strictObject({
  description: z.string().max(500).optional(),
  priority: z.number().int().min(1).max(1_000_000).optional(),
  container: ruleContainer,
  transform: accessTransformSchema
    .default('reveal')
    .describe('What a read decided by this rule shows: the data (reveal), its mask (mask), none (redact)'),
  permissions: z.array(tokenPermissionSchema).min(1).max(5),
});
const rule = accessRuleSchema;

/** The application's own request quota; without it RATE_LIMIT_PER_MINUTE applies. */
export const rateLimitSchema = z.strictObject({
  requests_per_minute: z.number().int().min(1).max(10_000_000).optional(),
});
export type RateLimit = z.output<typeof rateLimitSchema>;

const grants = {
  permissions: z.array(permissionSchema).max(50).default([]),
  rules: z.array(rule).max(50).default([]),
};

/**
 * What a public application may hold: its key ships in browsers and apps, so it only creates
 * tokens and token intents.
 */
const publicApplicationPermissions: readonly Permission[] = ['token:create', 'token-intent:create'];

/**
 * Whether an application of this type may hold this permission, tenant-wide or in a rule: the one
 * statement of the rule, which the create body, the application decider (an update of a public
 * application) and `GET /permissions` read.
 */
export const typeMayHold = (type: ApplicationType, permission: string): boolean =>
  type !== 'public' || (publicApplicationPermissions as readonly string[]).includes(permission);

/** A permission (tenant-wide or of a rule) that an application's type may not hold: where, and why. */
export interface GrantTypeMayNotHold {
  /** From the body's root: `['permissions', 0]`, `['rules', 1, 'permissions', 0]`. */
  path: (string | number)[];
  message: string;
}

/** Every permission of these grants that an application of this type may not hold (typeMayHold). */
export function grantsTypeMayNotHold(
  type: ApplicationType,
  grants: { permissions: readonly string[]; rules: readonly { permissions: readonly string[] }[] },
): GrantTypeMayNotHold[] {
  const message = `A ${type} application may only hold ${publicApplicationPermissions.join(', ')}`;
  const refused: GrantTypeMayNotHold[] = [];
  grants.permissions.forEach((permission, index) => {
    if (!typeMayHold(type, permission)) refused.push({ path: ['permissions', index], message });
  });
  grants.rules.forEach((containerRule, ruleIndex) =>
    containerRule.permissions.forEach((permission, index) => {
      if (!typeMayHold(type, permission)) {
        refused.push({ path: ['rules', ruleIndex, 'permissions', index], message });
      }
    }),
  );
  return refused;
}

/** A public application's key ships in browsers and apps: it may only create tokens and token intents. */
function publicKeysOnlyCreate(
  body: { type: ApplicationType; permissions: string[]; rules: { permissions: string[] }[] },
  context: z.RefinementCtx,
) {
  for (const { path, message } of grantsTypeMayNotHold(body.type, body)) {
    context.addIssue({ code: 'custom', path, message });
  }
}

export const createApplicationBody = z
  .strictObject({
    name: displayName,
    type: z.enum(applicationTypes),
    ...grants,
    rate_limit: rateLimitSchema.optional(),
  })
  .superRefine(publicKeysOnlyCreate);
export type CreateApplicationBody = z.output<typeof createApplicationBody>;

/** A replacement: without rate_limit the application goes back to the default quota. */
export const updateApplicationBody = z.strictObject({
  name: displayName,
  ...grants,
  rate_limit: rateLimitSchema.optional(),
});
export type UpdateApplicationBody = z.output<typeof updateApplicationBody>;

export const applicationSchema = z.object({
  id: uuid,
  tenant_id: uuid,
  name: z.string(),
  type: z.enum(applicationTypes),
  permissions: z.array(permissionSchema),
  rules: z.array(
    z.object({
      description: z.string().optional(),
      priority: z.number().int().optional(),
      container: z.string(),
      transform: accessTransformSchema,
      permissions: z.array(tokenPermissionSchema),
    }),
  ),
  rate_limit: z.object({ requests_per_minute: z.number().int().optional() }).optional(),
  created_by: uuid.optional(),
  created_at: timestamp.optional(),
  modified_by: uuid.optional(),
  modified_at: timestamp.optional(),
});
export type ApplicationResponse = z.output<typeof applicationSchema>;

/** The create response is the only place the key ever appears. */
export const createdApplicationSchema = applicationSchema.extend({ key: z.string() });

/**
 * `POST /applications/{id}/keys`: the body may be left out (Basis Theory's SDK sends none); the
 * key stops working at `expires_at` when given. No key outlives the key that mints it.
 */
export const createApplicationKeyBody = z
  .strictObject({
    expires_at: timestamp
      .optional()
      .describe(
        'When the key stops working (ISO 8601 with an offset, later than now). No key outlives the key that mints it: when the calling key expires, a later expires_at is a 400 and a key asked without one gets the calling key’s expiry.',
      ),
  })
  .optional();
export type CreateApplicationKeyBody = z.output<typeof createApplicationKeyBody>;

/** One of an application's keys: never the key itself (only its create response shows it). */
export const applicationKeySchema = z.object({
  id: uuid,
  tenant_id: uuid,
  application_id: uuid,
  /** From this instant on the key is refused (401); absent: it never expires. */
  expires_at: timestamp.optional(),
  created_by: uuid.optional(),
  created_at: timestamp.optional(),
});
export type ApplicationKeyResponse = z.output<typeof applicationKeySchema>;

/** The create response is the only place a key ever appears. */
export const createdApplicationKeySchema = applicationKeySchema.extend({ key: z.string() });
export type CreatedApplicationKeyResponse = z.output<typeof createdApplicationKeySchema>;

export const applicationKeyParams = z.object({ id: uuid, key_id: uuid });

/** One permission as `GET /permissions` lists it (Basis Theory's `Permission`). */
export const permissionDescriptionSchema = z.object({
  type: permissionSchema,
  description: z.string(),
  /** The application types that may hold it (typeMayHold). */
  application_types: z.array(z.enum(applicationTypes)),
});
export type PermissionDescription = z.output<typeof permissionDescriptionSchema>;

/** `GET /permissions?application_type=`: only the permissions that type may hold. */
export const listPermissionsQuery = z.strictObject({ application_type: z.enum(applicationTypes).optional() });

/** Every permission with what it allows and the types that may hold it, derived from typeMayHold. */
export function describePermissions(applicationType?: ApplicationType): PermissionDescription[] {
  return permissions
    .map((permission) => ({
      type: permission,
      description: permissionDescriptions[permission],
      application_types: applicationTypes.filter((type) => typeMayHold(type, permission)),
    }))
    .filter((entry) => applicationType === undefined || entry.application_types.includes(applicationType));
}
