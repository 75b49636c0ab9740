import { invalidCommand, notAllowed, type DomainError, type FieldErrors } from '@tokenvault/platform';
import { permissions as everyPermission, type ApplicationType, type RateLimit } from '@tokenvault/contracts';

/** An application's type and grants: what a caller holds, or what it asks an application to hold. */
export interface ApplicationGrants {
  type: ApplicationType;
  permissions: readonly string[];
  rules: readonly { container: string; permissions: readonly string[] }[];
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

function holdsOn(caller: ApplicationGrants, permission: string, container: string): boolean {
  return (
    caller.permissions.includes(permission) ||
    caller.rules.some((rule) => container.startsWith(rule.container) && rule.permissions.includes(permission))
  );
}

/**
 * No key grants what it does not hold (OWASP API5): every tenant-wide permission requested must be
 * held tenant-wide; a container rule's permission must be held tenant-wide or by a rule on that
 * container or a parent of it; the type must not rank above the caller's. Updating its own
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
  requested.rules.forEach((rule, index) => {
    for (const permission of rule.permissions) {
      if (!holdsOn(caller, permission, rule.container)) {
        add(`body.rules.${index}.permissions`, `${permission} on ${rule.container} is not held by this key`);
      }
    }
  });
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
