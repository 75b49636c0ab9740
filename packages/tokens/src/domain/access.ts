import type { ContainerRule } from '@tokenvault/platform';
import {
  decidingRule,
  impactLevels,
  lowerImpactContainers,
  readDecision,
  transformOf,
  useDecision,
  type AccessTarget,
  type AccessTransform,
  type ImpactLevel,
} from '@tokenvault/contracts';

export { lowerImpactContainers };

/** The grants of a caller, as plain data so that deciders can check them without I/O. */
export interface Grants {
  permissions: ReadonlySet<string> | readonly string[];
  rules: readonly ContainerRule[];
}

const holdsTenantWide = (grants: Grants, permission: string): boolean =>
  grants.permissions instanceof Set
    ? grants.permissions.has(permission)
    : (grants.permissions as string[]).includes(permission);

function allowedOn(grants: Grants, permission: string, container: string): boolean {
  return (
    holdsTenantWide(grants, permission) || decidingRule(grants.rules, permission, [container]) !== undefined
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

/** What of a token a read decides on: its containers, and its privacy (for its restriction policy). */
export type ReadTarget = AccessTarget;

/**
 * The containers under which a key with rules only may read, for a list's SQL filter: each
 * token:read rule's container and, for a rule on `/<classification>/<impact_level>/`, the same
 * classification's higher impact levels (whose tokens it reads by their restriction policy);
 * null when it may read them all. A listed row is then decided by readTransform.
 */
export function readableContainers(grants: Grants, permission: string): string[] | null {
  if (holdsTenantWide(grants, permission)) return null;
  const containers = new Set<string>();
  for (const rule of grants.rules) {
    if (!rule.permissions.includes(permission)) continue;
    containers.add(rule.container);
    const [, classification, level] = /^\/([^/]+)\/([^/]+)\/$/.exec(rule.container) ?? [];
    const index = impactLevels.indexOf(level as ImpactLevel);
    if (classification === undefined || index < 0) continue;
    for (const higher of impactLevels.slice(index + 1)) containers.add(`/${classification}/${higher}/`);
  }
  return [...containers];
}

/**
 * What a read of this token shows the caller (GET, lists, children, `svc`): a tenant-wide
 * permission reveals; otherwise the first rule by priority whose container covers one of the
 * token's containers and which holds the permission decides, by its transform (reveal when it has
 * none); with no such rule, for a token in its privacy's container (`/pci/high/…`), a rule on its
 * classification at a lower impact level (`/pci/low/`) gives the token's restriction policy (mask
 * or redact); undefined: no access (403).
 */
export function readTransform(
  grants: Grants,
  permission: string,
  token: ReadTarget,
): AccessTransform | undefined {
  // readDecision (contracts) is the one statement of the rules' decision; the grant check compares by it.
  if (holdsTenantWide(grants, permission)) return 'reveal';
  return readDecision(grants.rules, permission, token);
}

/**
 * What a use of this token's data shows (reactor arguments, proxy expressions), which needs the
 * permission on every container of the token: the least revealing of what decides on each of
 * them; undefined when one of them is not held (403).
 */
export function useTransform(
  grants: Grants,
  permission: string,
  containers: readonly string[],
): AccessTransform | undefined {
  if (holdsTenantWide(grants, permission)) return 'reveal';
  return useDecision(grants.rules, permission, containers);
}

/**
 * Whether the caller's rules reveal a token on every container it is (or will be) in: a
 * tenant-wide token:read, or on each container a deciding token:read rule that reveals (a masking
 * or redacting rule, or only the restriction policy of a lower impact level, does not). What may
 * set or evaluate an expression on the token's data with its errors told (docs/security.md, "One
 * rule for expressions on stored data"): its answers tell of the data.
 */
export const revealsOnEvery = (grants: Grants, containers: readonly string[]): boolean =>
  useTransform(grants, 'token:read', containers) === 'reveal';

/**
 * Whether the caller's token:read decision on the token reveals it: what a term compared with
 * its data (a search's `data:` and `fingerprint:`, deduplication) needs to match it, since a
 * match tells the caller the data (docs/security.md, "Terms on stored data").
 */
export const revealsToken = (grants: Grants, token: ReadTarget): boolean =>
  readTransform(grants, 'token:read', token) === 'reveal';

/**
 * The containers under which a token:read rule reveals (null: every container), for the SQL
 * filter of a search by terms on data; revealsToken then decides each row (a mask rule of a
 * higher priority can still decide a token under them). A restriction policy never reveals.
 */
export function revealableContainers(grants: Grants): string[] | null {
  if (holdsTenantWide(grants, 'token:read')) return null;
  return grants.rules
    .filter((rule) => rule.permissions.includes('token:read') && transformOf(rule) === 'reveal')
    .map((rule) => rule.container);
}

/**
 * Whether the caller's token:read decision reveals every token of the tenant, wherever it is:
 * token:read tenant-wide, or a rule on `/` and no token:read rule that masks or redacts. A
 * unique index's claim spans the tenant, so only such a caller may be told that a value is held.
 */
export function revealsEveryToken(grants: Grants): boolean {
  if (holdsTenantWide(grants, 'token:read')) return true;
  const readRules = grants.rules.filter((rule) => rule.permissions.includes('token:read'));
  return (
    readRules.some((rule) => rule.container === '/') &&
    readRules.every((rule) => transformOf(rule) === 'reveal')
  );
}
