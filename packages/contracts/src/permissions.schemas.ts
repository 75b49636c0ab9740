import { z } from 'zod';

/** Token permissions are checked per container of the token; the others per tenant. */
export const tokenPermissions = [
  'token:create',
  'token:read',
  'token:update',
  'token:delete',
  'token:use',
  'token:search',
] as const;

export const permissions = [
  ...tokenPermissions,
  'application:create',
  'application:read',
  'application:update',
  'application:delete',
  'log:read',
  'tenant:read',
  'tenant:update',
  'tenant:delete',
  'report:read',
  'tenant:member:read',
  'tenant:member:delete',
  'tenant:invitation:create',
  'tenant:invitation:read',
  'tenant:invitation:update',
  'tenant:invitation:delete',
  'reactor:create',
  'reactor:read',
  'reactor:update',
  'reactor:delete',
  'proxy:create',
  'proxy:read',
  'proxy:update',
  'proxy:delete',
  'proxy:invoke',
  'webhook:create',
  'webhook:read',
  'webhook:update',
  'webhook:delete',
  'token-intent:create',
  'token-intent:read',
  'token-intent:delete',
] as const;

export type Permission = (typeof permissions)[number];
export const permissionSchema = z.enum(permissions);
export const tokenPermissionSchema = z.enum(tokenPermissions);

/** What each permission lets its holder do, for `GET /permissions` and the API reference. */
export const permissionDescriptions: Record<Permission, string> = {
  'token:create': 'Create tokens (in the containers of its rules, when held by a rule).',
  'token:read': 'Read tokens with their data (in the containers of its rules, when held by a rule).',
  'token:update': 'Update tokens (in the containers of its rules, when held by a rule).',
  'token:delete':
    'Delete tokens and their associations (in the containers of its rules, when held by a rule).',
  'token:use':
    'Invoke reactors and use tokens without reading them: detokenized into a reactor or through the proxy (in the containers of its rules, when held by a rule).',
  'token:search':
    'Search tokens by their search indexes, metadata, type, container and fingerprint; a result holds its data only where the key also holds token:read (in the containers of its rules, when held by a rule).',
  'application:create': 'Create applications, holding no more than the caller holds.',
  'application:read': 'List and read applications and their keys (never a key itself).',
  'application:update':
    'Update applications and create or delete their keys, for applications holding no more than the caller holds.',
  'application:delete': 'Delete applications holding no more than the caller holds.',
  'log:read': 'Read the tenant’s audit log and the proofs of its rows.',
  'tenant:read': 'Read the tenant: its name and settings.',
  'tenant:update': 'Update the tenant’s name and settings.',
  'tenant:delete': 'Delete the tenant and every piece of its data.',
  'report:read': 'Read the tenant’s usage report.',
  'tenant:member:read': 'List and read the tenant’s members.',
  'tenant:member:delete': 'Remove members from the tenant.',
  'tenant:invitation:create': 'Invite people to become members of the tenant, and resend invitations.',
  'tenant:invitation:read': 'List and read the tenant’s invitations.',
  'tenant:invitation:update':
    'Kept for Basis Theory’s permission set: no route needs it (a resend needs tenant:invitation:create).',
  'tenant:invitation:delete': 'Delete invitations.',
  'reactor:create': 'Create reactors and reactor formulas.',
  'reactor:read': 'List and read reactors and reactor formulas.',
  'reactor:update': 'Update reactors and reactor formulas.',
  'reactor:delete': 'Delete reactors and reactor formulas.',
  'proxy:create': 'Create pre-configured proxies.',
  'proxy:read': 'List and read pre-configured proxies.',
  'proxy:update': 'Update pre-configured proxies.',
  'proxy:delete': 'Delete pre-configured proxies.',
  'proxy:invoke': 'Call the proxy, detokenizing what its request names.',
  'webhook:create': 'Create webhooks (subscriptions of a receiver URL to event types).',
  'webhook:read': 'List and read webhooks and their delivery history (not the signing key: webhook:update).',
  'webhook:update':
    'Update webhooks, read and rotate the signing key, ping a webhook and redeliver a delivery.',
  'webhook:delete': 'Delete webhooks.',
  'token-intent:create':
    'Create token intents: data checked and held sealed for at most 24 hours until POST /tokens makes it a token.',
  'token-intent:read': 'Read token intents (never their data).',
  'token-intent:delete': 'Delete token intents, shredding their data.',
};
