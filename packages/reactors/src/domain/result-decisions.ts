import {
  readDecision,
  transformRank,
  useDecision,
  type AccessTarget,
  type AccessTransform,
} from '@tokenvault/contracts';
import type { ContainerRule } from '@tokenvault/platform';
import type { SeenDecisions } from '@tokenvault/code-runs';

/** Grants as a decision needs them: tenant-wide permissions and container rules. */
export interface DecidingGrants {
  permissions: ReadonlySet<string> | readonly string[];
  rules: readonly ContainerRule[];
}

const holds = (grants: DecidingGrants, permission: string) =>
  grants.permissions instanceof Set
    ? grants.permissions.has(permission)
    : (grants.permissions as readonly string[]).includes(permission);

/** A use of a token's data (reactor arguments): tenant-wide reveals, else the least revealing rule on its containers (useTransform). */
export const useTransformOf = (grants: DecidingGrants, containers: readonly string[]) =>
  holds(grants, 'token:use') ? 'reveal' : useDecision(grants.rules, 'token:use', containers);

/** A read of a token (what `svc` answers): tenant-wide reveals, else the read decision (readTransform). */
const readTransformOf = (grants: DecidingGrants, token: AccessTarget) =>
  holds(grants, 'token:read') ? 'reveal' : readDecision(grants.rules, 'token:read', token);

const isTransform = (value: unknown): value is AccessTransform =>
  typeof value === 'string' && Object.hasOwn(transformRank, value);

/** Whether `now` shows at least as much as `then` (no access now shows nothing). */
const showsAsMuch = (now: AccessTransform | undefined, then: AccessTransform) =>
  now !== undefined && transformRank[now] >= transformRank[then];

/**
 * Whether a token last changed (`modifiedAt`, null: never) before a run began (`seenAt`): if not,
 * its data may no longer be what the run saw, and a result derived from it goes with that data.
 * Any change counts (metadata too): a result is withdrawn rather than risk answering data the
 * token no longer holds.
 */
export const unchangedSince = (modifiedAt: Date | null, seenAt: Date): boolean =>
  modifiedAt === null || modifiedAt.getTime() < seenAt.getTime();

/** A token as it is now: what decides on it. */
export type TokenNow = AccessTarget;

/**
 * Whether what decides on each token a run saw still shows at least as much as the run saw: for
 * a token in its args, the caller's use decision now (`caller`) against the transform it was
 * given; for one `svc` read, the run's application's read decision now (`application`: undefined
 * when it is gone) against what its grants then decided on the token as answered. A token not in
 * `tokens` (gone) is left to the liveness check. A result for which this is false is withdrawn:
 * narrowing a rule narrows every result it shaped.
 */
export function seenStillShown(
  seen: SeenDecisions | undefined,
  now: { caller: DecidingGrants; application: DecidingGrants | undefined },
  tokens: ReadonlyMap<string, TokenNow>,
): boolean {
  for (const [id, then] of Object.entries(seen?.args ?? {})) {
    const token = tokens.get(id);
    if (!token) continue;
    // An unknown transform was not recorded by this service: nothing shows as much.
    if (!isTransform(then) || !showsAsMuch(useTransformOf(now.caller, token.containers), then)) return false;
  }
  const svc = seen?.svc;
  if (!svc) return true;
  if (!now.application) return false;
  for (const [id, answered] of Object.entries(svc.tokens)) {
    const token = tokens.get(id);
    if (!token) continue;
    const then = readTransformOf(svc, {
      containers: answered.containers,
      privacy: (answered.privacy as AccessTarget['privacy'] | undefined) ?? token.privacy,
    });
    if (then === undefined) continue;
    if (!showsAsMuch(readTransformOf(now.application, token), then)) return false;
  }
  return true;
}
