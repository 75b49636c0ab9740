import { invalidCommand, notAllowed, type DomainError, type FieldErrors } from '@tokenvault/platform';
import {
  decidingRule,
  permissions as everyPermission,
  transformOf,
  transformRank,
  type AccessRuleGrant,
  type AccessTransform,
  type ApplicationType,
  type RateLimit,
} from '@tokenvault/contracts';

/** An application's type and grants: what a caller holds, or what it asks an application to hold. */
export interface ApplicationGrants {
  type: ApplicationType;
  permissions: readonly string[];
  rules: readonly AccessRuleGrant[];
}

/**
 * Types rank by what their key may do: a public key only creates tokens, a private key holds
 * what it is given, a management key is the tenant's administrator. A caller grants its own type
 * or a lower one.
 */
const typeRank: Record<ApplicationType, number> = { public: 0, private: 1, management: 2 };

/**
 * The caller of an application command: what its own application holds, and its request quota.
 * A request quota is held like a permission: a key gives no application more requests per minute
 * than it has itself.
 */
export interface ApplicationCaller extends ApplicationGrants {
  /** The caller's own quota in requests per minute (Infinity: none). */
  requestsPerMinute: number;
  /** RATE_LIMIT_PER_MINUTE: the quota of an application without a rate_limit (Infinity: none). */
  serviceDefaultPerMinute: number;
}

/** The bootstrap CLI acts for the operator, who holds everything: the first key has every permission. */
export const operatorGrants: ApplicationCaller = {
  type: 'management',
  permissions: [...everyPermission],
  rules: [],
  requestsPerMinute: Infinity,
  serviceDefaultPerMinute: Infinity,
};

/** RATE_LIMIT_PER_MINUTE as a quota: 0 means no limit. */
export const serviceDefaultQuota = (configured: number): number => (configured > 0 ? configured : Infinity);

/** Requests per minute an application's key may make: its own rate_limit, else the service default. */
export function quotaOf(rateLimit: RateLimit | undefined, serviceDefaultPerMinute: number): number {
  return rateLimit?.requests_per_minute ?? serviceDefaultPerMinute;
}

/** The field named when an application would get a larger quota than the caller holds. */
export function quotaNotHeld(caller: ApplicationCaller, quota: number, field: string): FieldErrors {
  if (quota <= caller.requestsPerMinute) return {};
  const held = Number.isFinite(caller.requestsPerMinute) ? String(caller.requestsPerMinute) : 'unlimited';
  const asked = Number.isFinite(quota) ? `${quota} requests per minute` : 'no request limit';
  return { [field]: [`${asked} is more than this key holds (${held} per minute)`] };
}

/** Permissions whose transform matters: the reads of data (a rule's transform means nothing to the others). */
const readsData: readonly string[] = ['token:read', 'token:use'];

/** What the grants give of a permission on a container: the deciding transform, or undefined (not held). */
function heldOn(
  grants: ApplicationGrants,
  permission: string,
  container: string,
): AccessTransform | undefined {
  if (grants.permissions.includes(permission)) return 'reveal';
  const rule = decidingRule(grants.rules, permission, [container]);
  return rule && transformOf(rule);
}

/**
 * No key grants what it does not hold (OWASP API5): every tenant-wide permission requested must be
 * held tenant-wide; wherever a requested rule decides a permission (on its container and below),
 * the caller must hold it there, tenant-wide or by its own deciding rule, and for the reads of
 * data (token:read, token:use) with a transform that shows as much (reveal > mask > redact;
 * tenant-wide reveals); the type must not rank above the caller's. Updating its own
 * application is the same check, so a key can never widen itself. Answers, by field, what is not
 * held (empty when everything is); `typeField` names where the type came from.
 */
export function grantsNotHeld(
  caller: ApplicationGrants,
  requested: ApplicationGrants,
  typeField = 'body.type',
): FieldErrors {
  const errors: FieldErrors = {};
  const add = (field: string, message: string) => {
    const messages = (errors[field] ??= []);
    if (!messages.includes(message)) messages.push(message);
  };
  if (typeRank[requested.type] > typeRank[caller.type]) {
    add(typeField, `${requested.type} is not held by this key (it is ${caller.type})`);
  }
  for (const permission of requested.permissions) {
    if (!caller.permissions.includes(permission)) {
      add('body.permissions', `${permission} is not held by this key`);
    }
  }
  // Which rule decides, and so what a rule set gives, changes only at the containers of the
  // rules: every container path decides as the longest of those containers above it. Comparing the
  // two rule sets at each of them (the caller's and the requested) compares them everywhere.
  const containers = [...new Set([...requested.rules, ...caller.rules].map((rule) => rule.container))];
  const asked = [...new Set(requested.rules.flatMap((rule) => rule.permissions))];
  for (const container of containers) {
    for (const permission of asked) {
      const deciding = decidingRule(requested.rules, permission, [container]);
      if (!deciding) continue;
      const index = requested.rules.indexOf(deciding);
      const held = heldOn(caller, permission, container);
      if (held === undefined) {
        add(
          `body.rules.${index}.permissions`,
          `${permission} on ${deciding.container} is not held by this key`,
        );
        continue;
      }
      const transform = transformOf(deciding);
      if (readsData.includes(permission) && transformRank[transform] > transformRank[held]) {
        add(
          `body.rules.${index}.transform`,
          `${transform} of ${permission} on ${container} is more than this key holds (${held})`,
        );
      }
    }
  }
  return errors;
}

/** Not allowed, naming each field the caller does not hold. */
export function grantsNotHeldError(errors: FieldErrors): DomainError {
  return notAllowed(
    'This API key cannot grant a type, permission or rule it does not hold itself; see errors.',
    errors,
  );
}

/** An application that code runs as (a reactor's, a proxy's), as tenancy reported it. */
export interface ActingApplication extends ApplicationGrants {
  id: string;
}

/** What a caller holds when it binds code to an application (its type does not count). */
export type CallerGrants = Omit<ApplicationGrants, 'type'>;

/**
 * What a (public or private) application holds that the caller does not. Whoever may run code
 * bound to an application acts as it (through `svc`), so binding one, or changing the code that
 * runs as one, must not give the caller more than it holds.
 */
export function actingGrantsNotHeld(caller: CallerGrants, application: ApplicationGrants): string[] {
  // The bound application is public or private; the caller ranks as private: only grants count.
  return Object.values(grantsNotHeld({ type: 'private', ...caller }, application)).flat();
}

/** Not allowed: the application a `subject` (reactor, proxy) runs as holds what the caller does not. */
export const actingGrantsNotHeldError = (subject: string, field: string, notHeld: string[]): DomainError =>
  notAllowed(`A ${subject}’s application may hold nothing this API key does not hold itself.`, {
    [field]: notHeld,
  });

/** The application a `subject` runs as: public or private (invalid), holding nothing the caller does not (not allowed). */
export function assertActingApplication(
  subject: string,
  caller: CallerGrants,
  application: ApplicationGrants,
  field: string,
): void {
  if (application.type === 'management') {
    throw invalidCommand(`A ${subject}’s application must be of type public or private.`, {
      [field]: ['Must be a public or private application (this one is management)'],
    });
  }
  const notHeld = actingGrantsNotHeld(caller, application);
  if (notHeld.length > 0) throw actingGrantsNotHeldError(subject, field, notHeld);
}
