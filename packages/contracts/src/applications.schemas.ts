import { z } from 'zod';
import { containerPath, displayName, timestamp, uuid } from './common.ts';
import { permissionSchema, tokenPermissionSchema } from './permissions.schemas.ts';

export const applicationTypes = ['private', 'public', 'management'] as const;
export type ApplicationType = (typeof applicationTypes)[number];

const rule = z.strictObject({
  container: containerPath,
  permissions: z.array(tokenPermissionSchema).min(1).max(5),
});

/** The application's own request quota; without it RATE_LIMIT_PER_MINUTE applies. */
export const rateLimitSchema = z.strictObject({
  requests_per_minute: z.number().int().min(1).max(10_000_000).optional(),
});
export type RateLimit = z.output<typeof rateLimitSchema>;

const grants = {
  permissions: z.array(permissionSchema).max(50).default([]),
  rules: z.array(rule).max(50).default([]),
};

/** A public application's key ships in browsers and apps: it may only create tokens. */
function publicKeysOnlyCreate(
  body: { type?: string; permissions: string[]; rules: { permissions: string[] }[] },
  context: z.RefinementCtx,
) {
  if (body.type !== 'public') return;
  body.permissions.forEach((permission, index) => {
    if (permission !== 'token:create') {
      context.addIssue({
        code: 'custom',
        path: ['permissions', index],
        message: 'A public application may only hold token:create',
      });
    }
  });
  body.rules.forEach((containerRule, ruleIndex) =>
    containerRule.permissions.forEach((permission, index) => {
      if (permission !== 'token:create') {
        context.addIssue({
          code: 'custom',
          path: ['rules', ruleIndex, 'permissions', index],
          message: 'A public application may only hold token:create',
        });
      }
    }),
  );
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
  rules: z.array(z.object({ container: z.string(), permissions: z.array(tokenPermissionSchema) })),
  rate_limit: z.object({ requests_per_minute: z.number().int().optional() }).optional(),
  created_by: uuid.optional(),
  created_at: timestamp.optional(),
  modified_by: uuid.optional(),
  modified_at: timestamp.optional(),
});
export type ApplicationResponse = z.output<typeof applicationSchema>;

/** The create response is the only place the key ever appears. */
export const createdApplicationSchema = applicationSchema.extend({ key: z.string() });
