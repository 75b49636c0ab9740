import type { ContainerRule } from '@tokenvault/platform';

/** The grants of a caller, as plain data so that deciders can check them without I/O. */
export interface Grants {
  permissions: ReadonlySet<string> | readonly string[];
  rules: readonly ContainerRule[];
}

function allowedOn(grants: Grants, permission: string, container: string): boolean {
  const tenantWide =
    grants.permissions instanceof Set
      ? grants.permissions.has(permission)
      : (grants.permissions as string[]).includes(permission);
  return (
    tenantWide ||
    grants.rules.some((rule) => container.startsWith(rule.container) && rule.permissions.includes(permission))
  );
}

/** Changing a token needs the permission on every container it is (or will be) in. */
export function allowedOnAll(grants: Grants, permission: string, containers: readonly string[]): boolean {
  return containers.every((container) => allowedOn(grants, permission, container));
}

/** Reading a token needs the permission on one of its containers. */
export function allowedOnAny(grants: Grants, permission: string, containers: readonly string[]): boolean {
  return containers.some((container) => allowedOn(grants, permission, container));
}
