import type { ContextManifest } from '@tokenvault/cqrs';
import type { AppendHook, InlineProjection, UniquenessRules } from '@tokenvault/eventstore';
import type { RouteDefinition } from '@tokenvault/platform';
import { auditContext } from '@tokenvault/audit';
import { proxyContext } from '@tokenvault/proxy';
import { reactorsContext } from '@tokenvault/reactors';
import { tenancyContext } from '@tokenvault/tenancy';
import { tokensContext } from '@tokenvault/tokens';
import { verifiableLogContext } from '@tokenvault/verifiable-log';
import { webhooksContext } from '@tokenvault/webhooks';

/**
 * Every bounded context of the service, each through its manifest (`ContextManifest` of
 * @tokenvault/cqrs): the runtime takes their migrations, read models, write-side effects, claims,
 * invalidations, event types and routes from this list alone. Adding a context is adding it here.
 * In dependency order: a context's migrations and read models after those it builds on.
 */
export const contexts = [
  tenancyContext,
  tokensContext,
  reactorsContext,
  proxyContext,
  webhooksContext,
  auditContext,
  verifiableLogContext,
] as const;

type RouteDepsOf<Context> = Context extends ContextManifest<infer Deps> ? Deps : never;
type Intersection<Union> = (Union extends unknown ? (value: Union) => void : never) extends (
  value: infer Both,
) => void
  ? Both
  : never;

/** What the composition root hands the contexts' routes: every context's needs at once. */
export type ContextDeps = Intersection<RouteDepsOf<(typeof contexts)[number]>>;

/** Their tables, in the list's order. */
export const contextMigrations = contexts.flatMap((context) => context.migrations);

/** The read models a client reads back right after a write (PROJECTIONS=inline: in the append). */
export const contextConsistentProjections = contexts.flatMap((context) => context.projections.consistent);

/** The read models that may trail the writes: always the projector's. */
export const contextTrailingProjections = contexts.flatMap((context) => context.projections.trailing);

/** The write-side effects every append to the PostgreSQL store makes in its own transaction. */
export const contextInlineEffects: InlineProjection[] = contexts.flatMap((context) => context.effects.inline);

/** The same effects around an append to an external store (EVENTSTORE_URL). */
export const contextExternalEffects: AppendHook[] = contexts.flatMap((context) => context.effects.external);

/** The uniqueness records an event claims or releases: the first context's that has any. */
export const contextClaims: UniquenessRules = (event) => {
  for (const context of contexts) {
    const claims = context.claims?.(event);
    if (claims) return claims;
  }
  return undefined;
};

/** The cache keys an event makes stale, every context's. */
export const contextInvalidationsOf = (event: { type: string; data: unknown }): string[] =>
  contexts.flatMap((context) => context.invalidations?.(event) ?? []);

/** Every event type the contexts append. */
export const contextEventTypes: string[] = contexts.flatMap((context) => context.eventTypes);

/** What the contexts serve outside the JSON routes, for the OpenAPI document (`/proxy/**`). */
export const contextDocumentedOperations: RouteDefinition[] = contexts.flatMap(
  (context) => context.documentedOperations ?? [],
);

/** Every context's routes, in the list's order (so in the OpenAPI document). */
export const contextRoutes = (deps: ContextDeps): RouteDefinition[] =>
  contexts.flatMap((context) => context.routes(deps));
