import { z } from 'zod';

/** Token permissions are checked per container of the token; the others per tenant. */
export const tokenPermissions = [
  'token:create',
  'token:read',
  'token:update',
  'token:delete',
  'token:use',
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
] as const;

export type Permission = (typeof permissions)[number];
export const permissionSchema = z.enum(permissions);
export const tokenPermissionSchema = z.enum(tokenPermissions);
