import type { Migration, RouteDefinition } from '@tokenvault/platform';
import type { AppendHook, InlineProjection, UniquenessRules } from '@tokenvault/eventstore';
import type { Projection } from './projector.ts';

/**
 * What a bounded context contributes to the service, in one object: the runtime loops over a
 * list of these (packages/runtime/src/contexts.ts) for the migrations, the read models, the
 * write-side effects and claims of every append, the cache invalidations, the event types the
 * coverage specs check, and the routes. A context registers nothing any other way.
 */
export interface ContextManifest<RouteDeps = never> {
  readonly name: string;
  /**
   * Names it had before: a migration applied under one keeps its id (deployed databases record
   * it), and so the prefix of that name.
   */
  readonly formerNames?: readonly string[];
  /** Its tables (row-level security, grants), applied in the list's order after the infrastructure's. */
  readonly migrations: readonly Migration[];
  readonly projections: {
    /** Read back right after a write: with PROJECTIONS=inline, written in the append's transaction. */
    readonly consistent: readonly Projection[];
    /** May trail the writes (counters, the audit log): always the projector's. */
    readonly trailing: readonly Projection[];
  };
  /** Write-side effects of every append, in either projection mode (not read models). */
  readonly effects: {
    /** In the append's own transaction (the PostgreSQL event store). */
    readonly inline: readonly InlineProjection[];
    /** The same effects around an append to an external store (EVENTSTORE_URL), as hooks. */
    readonly external: readonly AppendHook[];
  };
  /** The uniqueness records its events claim or release (every append keeps them). */
  readonly claims?: UniquenessRules;
  /** The cache keys an event of this context makes stale (this process's caches, at once). */
  readonly invalidations?: (event: { type: string; data: unknown }) => readonly string[];
  /** Every event type it appends: each has an audit mapping and a public contract or none. */
  readonly eventTypes: readonly string[];
  /** Its routes, on collaborators the process's composition root built once. */
  routes(deps: RouteDeps): RouteDefinition[];
  /**
   * Operations it serves outside the JSON routes (mounted by a role, like `/proxy/**`): only
   * described in the OpenAPI document, after the routes.
   */
  readonly documentedOperations?: readonly RouteDefinition[];
}
