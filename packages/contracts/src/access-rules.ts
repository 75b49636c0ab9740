import { z } from 'zod';
import { containerOfPrivacy, impactLevels, type TokenPrivacy } from './token-types.ts';

// An application's access rules as Basis Theory shapes them (`AccessRule`): which rule decides a
// token's access, and what it lets the caller see of the data. The one statement of the order,
// read by the token reads (tokens' access decider) and by the no-escalation check of grants
// (tenancy's grant-rule). docs/applications.md, "Access rules".

/** What a deciding rule lets a reader see of a token's data: all of it, its mask, nothing. */
export const accessTransforms = ['reveal', 'mask', 'redact'] as const;
export type AccessTransform = (typeof accessTransforms)[number];
export const accessTransformSchema = z.enum(accessTransforms);

/** reveal > mask > redact: what a transform shows, so that no key grants more than it holds. */
export const transformRank: Record<AccessTransform, number> = { redact: 0, mask: 1, reveal: 2 };

/** The least revealing of these transforms (redact when there are none). */
export const leastRevealing = (transforms: readonly AccessTransform[]): AccessTransform =>
  transforms.reduce<AccessTransform>(
    (least, transform) => (transformRank[transform] < transformRank[least] ? transform : least),
    transforms[0] ?? 'redact',
  );

/** A rule as a principal or an application holds it; the fields of the anchor's rule are optional in what is stored. */
export interface AccessRuleGrant {
  container: string;
  permissions: readonly string[];
  /** Absent in rules stored before transforms: they reveal. */
  transform?: AccessTransform | undefined;
  /** 1 first; a rule without one comes after every rule with one. */
  priority?: number | undefined;
  description?: string | undefined;
}

/**
 * The rules in the order they are evaluated: by priority, 1 first; ties (equal or absent
 * priorities) keep their order in the array; a rule without a priority (one stored before
 * priorities) comes after every rule with one.
 */
export function rulesInOrder<Rule extends AccessRuleGrant>(rules: readonly Rule[]): Rule[] {
  return rules
    .map((rule, index) => ({ rule, index }))
    .sort(
      (a, b) =>
        (a.rule.priority ?? Number.POSITIVE_INFINITY) - (b.rule.priority ?? Number.POSITIVE_INFINITY) ||
        a.index - b.index,
    )
    .map(({ rule }) => rule);
}

/** Whether a rule's container covers this container: it is the same or a parent (`/` covers all). */
export const ruleCovers = (rule: Pick<AccessRuleGrant, 'container'>, container: string): boolean =>
  container.startsWith(rule.container);

/**
 * The rule that decides a permission on a token in these containers: the first rule, in
 * evaluation order (rulesInOrder), whose container covers one of them and which holds the
 * permission; undefined when none does (no access by rules).
 */
export function decidingRule<Rule extends AccessRuleGrant>(
  rules: readonly Rule[],
  permission: string,
  containers: readonly string[],
): Rule | undefined {
  return rulesInOrder(rules).find(
    (rule) =>
      rule.permissions.includes(permission) && containers.some((container) => ruleCovers(rule, container)),
  );
}

/** A rule's transform: a rule stored or given without one reveals (what rules meant before transforms). */
export const transformOf = (rule: Pick<AccessRuleGrant, 'transform'>): AccessTransform =>
  rule.transform ?? 'reveal';

/** What of a token a read decides on: its containers, and its privacy (for its restriction policy). */
export interface AccessTarget {
  containers: readonly string[];
  privacy: Pick<TokenPrivacy, 'classification' | 'impact_level' | 'restriction_policy'>;
}

/**
 * The containers of the token's classification at impact levels below its own
 * (`/pci/low/`, `/pci/moderate/` for a `pci`/`high` token): a rule there gives the token's
 * restriction policy (docs/applications.md, "Access rules").
 */
export function lowerImpactContainers(privacy: AccessTarget['privacy']): string[] {
  const below = impactLevels.slice(0, impactLevels.indexOf(privacy.impact_level));
  return below.map((level) => `/${privacy.classification}/${level}/`);
}

/**
 * What rules alone (no tenant-wide permission) let a read of this token show: the first rule by
 * priority whose container covers one of the token's containers and which holds the permission
 * decides, by its transform; with none, for a token in its privacy's container (`/pci/high/…`), a
 * rule on its classification at a lower impact level (`/pci/low/`) gives the token's restriction
 * policy; undefined: no access. The one statement of the read decision, for the token reads and
 * for the grant check that compares two rule sets by it.
 */
export function readDecision(
  rules: readonly AccessRuleGrant[],
  permission: string,
  token: AccessTarget,
): AccessTransform | undefined {
  const deciding = decidingRule(rules, permission, token.containers);
  if (deciding) return transformOf(deciding);
  const own = containerOfPrivacy(token.privacy);
  if (!token.containers.some((container) => container.startsWith(own))) return undefined;
  const lower = decidingRule(rules, permission, lowerImpactContainers(token.privacy));
  return lower ? token.privacy.restriction_policy : undefined;
}

/**
 * What rules alone let a use of this token's data show (reactor arguments, proxy expressions),
 * which needs the permission on every container of the token: the least revealing of what decides
 * on each; undefined when one of them is not held.
 */
export function useDecision(
  rules: readonly AccessRuleGrant[],
  permission: string,
  containers: readonly string[],
): AccessTransform | undefined {
  const transforms: AccessTransform[] = [];
  for (const container of containers) {
    const deciding = decidingRule(rules, permission, [container]);
    if (!deciding) return undefined;
    transforms.push(transformOf(deciding));
  }
  return transforms.length === 0 ? undefined : leastRevealing(transforms);
}
