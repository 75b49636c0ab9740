import { invalidCommand, notAllowed, type DomainError, type FieldErrors } from '@tokenvault/platform';
import {
  classifications,
  containerOfPrivacy,
  decidingRule,
  permissions as everyPermission,
  impactLevels,
  lowerImpactContainers,
  readDecision,
  restrictionPolicies,
  ruleCovers,
  rulesInOrder,
  transformOf,
  transformRank,
  type AccessRuleGrant,
  type AccessTarget,
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
  /**
   * When the caller's own key expires (ISO 8601; absent: never, or a member's session). A key's
   * expiry bounds its holder: no key it mints, for an application it creates or for an existing
   * one, outlives it (keyExpiryNotHeld).
   */
  keyExpiresAt?: string;
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

/**
 * The expiry of a key the caller mints: what it asked for, or, when it asked for none, the
 * caller's own (a key with no expiry mints keys without one); a 400 on `field` when what it asked
 * for is later than its own key's expiry. An expiring key cannot mint one that outlives it.
 */
export function keyExpiryOf(
  caller: Pick<ApplicationCaller, 'keyExpiresAt'>,
  asked: string | undefined,
  field: string,
): string | undefined {
  const bound = caller.keyExpiresAt;
  if (bound === undefined) return asked;
  if (asked === undefined) return bound;
  if (Date.parse(asked) > Date.parse(bound)) {
    throw invalidCommand('A key cannot mint a key that outlives it.', {
      [field]: [`Must be no later than the expiry of the calling key (${bound}), or left out to take it`],
    });
  }
  return asked;
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

/** Every privacy a token may have: each classification, impact level and restriction policy. */
const everyPrivacy: AccessTarget['privacy'][] = classifications.flatMap((classification) =>
  impactLevels.flatMap((impact_level) =>
    restrictionPolicies.map((restriction_policy) => ({ classification, impact_level, restriction_policy })),
  ),
);

/** The privacy containers, and the privacies whose container each is. */
const ownContainers = [...new Set(everyPrivacy.map(containerOfPrivacy))];
const privaciesOf = (own: string) => everyPrivacy.filter((privacy) => containerOfPrivacy(privacy) === own);

/**
 * The containers that stand for every container path when two rule sets are compared: the
 * containers of their rules and the privacy containers (`/<classification>/<impact_level>/`).
 * Which rules cover a path, and whether it is in a privacy's container, is the same as for the
 * longest of these that is a prefix of it (prefixes of a path are prefixes of one another); a path
 * with none decides nothing.
 */
function representativeContainers(rules: readonly AccessRuleGrant[]): string[] {
  return [...new Set([...rules.map((rule) => rule.container), ...ownContainers])];
}

/** Whether `granted` shows more than `held` of a permission: any access where none is held; for the reads of data, a more revealing transform. */
function revealsMore(
  permission: string,
  granted: AccessTransform | undefined,
  held: AccessTransform | undefined,
) {
  if (granted === undefined) return false;
  if (held === undefined) return true;
  return readsData.includes(permission) && transformRank[granted] > transformRank[held];
}

/**
 * Where the read decision of the requested rules shows more than the caller's on some token: the
 * first such token (its containers and privacy), the requested rule that decides there (by its
 * priority, or the lower-level rule that gives the token's restriction policy), and both
 * decisions; undefined when there is none.
 *
 * The read decision (readDecision) on a token is the first rule, by priority, covering any of its
 * containers, else the restriction policy when one of them is in its privacy's container and a
 * rule covers a lower impact level. Standing for each container by its representative, a token is
 * a set of them; and if the requested rules decide more than the caller's on a set, they already
 * do on a set of two of them: the container that decides for the requested rules (the requested
 * rule's container, or the privacy's container for its restriction policy) and the container that
 * decides for the caller (its deciding rule's, or again the privacy's). No rule of either set
 * covers anything in the pair it did not cover in the whole set, so both decisions stay. Every
 * pair of representatives, under every privacy, is therefore every token.
 */
export function readDecisionExceeding(
  caller: readonly AccessRuleGrant[],
  requested: readonly AccessRuleGrant[],
  permission: string,
):
  | {
      token: AccessTarget;
      rule: AccessRuleGrant;
      granted: AccessTransform;
      held: AccessTransform | undefined;
    }
  | undefined {
  const callerSide = sideOf(caller, permission);
  const requestedSide = sideOf(requested, permission);
  if (requestedSide.ordered.length === 0) return undefined;
  const containers = representativeContainers([...callerSide.ordered, ...requestedSide.ordered]);
  // The first rule covering each representative, on each side: a pair's deciding rule is the
  // earlier of its two (readDecision's first rule covering any container), without a sort per pair.
  const callerFirst = containers.map((container) => callerSide.firstCovering(container));
  const requestedFirst = containers.map((container) => requestedSide.firstCovering(container));
  // A pair is in at most two privacy containers (each representative in the one it starts with):
  // only their privacies can give a restriction policy; any other privacy stands for the rest.
  const ownOf = containers.map((container) => ownContainers.find((own) => container.startsWith(own)));
  for (let i = 0; i < containers.length; i++) {
    for (let j = i; j < containers.length; j++) {
      const pair = i === j ? [containers[i]!] : [containers[i]!, containers[j]!];
      const granting = Math.min(requestedFirst[i]!, requestedFirst[j]!);
      const holding = Math.min(callerFirst[i]!, callerFirst[j]!);
      const owns = [...new Set([ownOf[i], ownOf[j]])].flatMap((own) => (own ? [own] : []));
      // With a deciding rule on both sides, the privacy (the restriction policy) plays no part.
      const privacies =
        Number.isFinite(granting) && Number.isFinite(holding)
          ? everyPrivacy.slice(0, 1)
          : [
              ...owns.flatMap(privaciesOf),
              everyPrivacy.find((privacy) => !owns.includes(containerOfPrivacy(privacy)))!,
            ];
      for (const privacy of privacies) {
        const inOwn = owns.includes(containerOfPrivacy(privacy));
        const decision = (side: typeof callerSide, first: number) =>
          Number.isFinite(first)
            ? transformOf(side.ordered[first]!)
            : inOwn && side.coversLower(privacy)
              ? privacy.restriction_policy
              : undefined;
        if (!revealsMore(permission, decision(requestedSide, granting), decision(callerSide, holding)))
          continue;
        // What the service decides on this token (readDecision) is what is answered.
        const token = { containers: pair, privacy };
        const granted = readDecision(requested, permission, token);
        const held = readDecision(caller, permission, token);
        if (!revealsMore(permission, granted, held)) continue;
        const rule =
          decidingRule(requested, permission, pair) ??
          decidingRule(requested, permission, lowerImpactContainers(privacy))!;
        return { token, rule, granted: granted!, held };
      }
    }
  }
  return undefined;
}

/** One side's rules holding the permission, in evaluation order, and what its decision is built from. */
function sideOf(rules: readonly AccessRuleGrant[], permission: string) {
  const ordered = rulesInOrder(rules.filter((rule) => rule.permissions.includes(permission)));
  const lower = new Map<string, boolean>();
  return {
    ordered,
    /** The index in `ordered` of the first rule covering the container (Infinity: none). */
    firstCovering: (container: string) => {
      const index = ordered.findIndex((rule) => ruleCovers(rule, container));
      return index < 0 ? Number.POSITIVE_INFINITY : index;
    },
    /** Whether a rule covers a lower impact level of the privacy's classification (its restriction policy applies). */
    coversLower: (privacy: AccessTarget['privacy']) => {
      const key = containerOfPrivacy(privacy);
      let covers = lower.get(key);
      if (covers === undefined) {
        covers = decidingRule(ordered, permission, lowerImpactContainers(privacy)) !== undefined;
        lower.set(key, covers);
      }
      return covers;
    },
  };
}

/**
 * No key grants what it does not hold (OWASP API5): every tenant-wide permission requested must be
 * held tenant-wide; the type must not rank above the caller's; and the requested rules must decide
 * no more than the caller's own, for every permission, on every token, as the token reads decide
 * (readDecision, useDecision): first, wherever a requested rule decides a permission (on its
 * container and below) the caller must hold it there, tenant-wide or by its own deciding rule,
 * and for the reads of data (token:read, token:use) with a transform that shows as much
 * (reveal > mask > redact; tenant-wide reveals); then, on tokens in several containers and of every
 * privacy, where priorities and restriction policies decide, the requested rules' read decision
 * must show no more than the caller's (readDecisionExceeding). Updating its own application is the
 * same check, so a key can never widen itself. Answers, by field, what is not held (empty when
 * everything is); `typeField` names where the type came from.
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
  // One container at a time: which rule decides, and so what a rule set gives, changes only at the
  // containers of the rules: every container path decides as the longest of those above it (what a
  // use of the data, which needs every container, and the writes decide by).
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
  // Then whole tokens: several containers (priorities across them) and privacies (restriction
  // policies). A rule already named above is not named again.
  for (const permission of asked) {
    if (caller.permissions.includes(permission) || requested.permissions.includes(permission)) continue;
    const exceeding = readDecisionExceeding(caller.rules, requested.rules, permission);
    if (!exceeding) continue;
    const { token, rule, granted, held } = exceeding;
    const index = requested.rules.indexOf(rule);
    const field = `body.rules.${index}.${held === undefined ? 'permissions' : 'transform'}`;
    if (errors[`body.rules.${index}.permissions`] || errors[`body.rules.${index}.transform`]) continue;
    const { classification, impact_level, restriction_policy } = token.privacy;
    const where = `a ${classification}/${impact_level} token (restriction policy ${restriction_policy}) in ${token.containers.join(' and ')}`;
    add(
      field,
      held === undefined
        ? `${permission} on ${where} is not held by this key`
        : `${granted} of ${permission} on ${where} is more than this key holds there (${held})`,
    );
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

/**
 * Changing code that runs as an application (a reactor, a proxy) at all, even to unbind or delete
 * it, needs what that application holds: the assertion of binding it, on what it runs as now
 * (`bound`: undefined when none, or when the application is gone). Otherwise a lesser key rewrites
 * what runs as a greater application, unbinds it, or removes it (not allowed, on `path.id`; the
 * rule of applications, whose keys a lesser key neither mints nor revokes).
 */
export function assertMayChangeBound(
  subject: string,
  caller: CallerGrants,
  bound: ApplicationGrants | undefined,
): void {
  if (!bound) return;
  const notHeld = actingGrantsNotHeld(caller, bound);
  if (notHeld.length > 0) {
    throw notAllowed(
      `This ${subject} runs as an application holding what this API key does not: only a key holding all of it may change, unbind or delete the ${subject}.`,
      { 'path.id': notHeld },
    );
  }
}

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

/**
 * What an invitation gives: an ADMIN member (the one role there is to invite), whose session holds
 * every permission tenant-wide, as the management type, and never expires (createCallerAuthenticator).
 */
export const invitedMemberGrants: ApplicationGrants = {
  type: 'management',
  permissions: [...everyPermission],
  rules: [],
};

/**
 * Why the caller may not invite a member (or send an invitation again), naming each reason; empty
 * when it may. An invitation grants the member's role, so it is a grant like an application's: no
 * key grants what it does not hold (grantsNotHeld against what the role holds), and a key's expiry
 * bounds its holder, while a member's seat has no expiry: a key that expires invites no one.
 * Bounding the invitation and the seat by the key instead would make a member whose sessions end
 * unannounced; a vault invites with a lasting credential (a member's session, a key without expiry).
 */
export function invitationNotHeld(
  caller: Pick<ApplicationCaller, keyof ApplicationGrants | 'keyExpiresAt'>,
): string[] {
  const reasons = Object.values(grantsNotHeld(caller, invitedMemberGrants)).flat();
  const notHeld = reasons.map((reason) =>
    reason.replace(/ is not held by this key/, ' is held by an ADMIN member but not by this key'),
  );
  if (caller.keyExpiresAt !== undefined) {
    notHeld.push(
      `This key expires (${caller.keyExpiresAt}) and an ADMIN member does not: only a key without an expiry, or a member, may invite`,
    );
  }
  return notHeld;
}

/** Not allowed: the caller may not grant the role an invitation gives (`body.role`). */
export const invitationNotHeldError = (notHeld: string[]): DomainError =>
  notAllowed(
    'An invitation makes an ADMIN member, who holds every permission and never expires: only a key holding all of it, without an expiry, may invite or resend.',
    { 'body.role': notHeld },
  );
