import type { Projection } from '@tokenvault/cqrs';
import type { Config } from '@tokenvault/platform';
import type { InlineProjection, UniquenessRules } from '@tokenvault/eventstore';
import {
  contextClaims,
  contextConsistentProjections,
  contextInlineEffects,
  contextTrailingProjections,
} from './contexts.ts';

/**
 * The read models a client reads back right after a write (tokens and associations, tenant,
 * applications and keys, users, members, invitations, formulas and reactors): with
 * PROJECTIONS=inline they are written in the append's own transaction.
 */
export const consistentProjections: Projection[] = contextConsistentProjections;

/** Read models that may trail the writes (usage counters, the audit log): always the projector's. */
export const trailingProjections: Projection[] = contextTrailingProjections;

export const allProjections: Projection[] = [...consistentProjections, ...trailingProjections];

/** The projector's checkpoint name, whichever projections it runs. */
export const readModelsProjectorName = 'read-models';

/** What the projector runs: only the trailing read models when the others are written inline. */
export const projectorProjections = (config: Pick<Config, 'PROJECTIONS'>): Projection[] =>
  config.PROJECTIONS === 'inline' ? trailingProjections : allProjections;

/** The read models every append writes in its own transaction (and a rebuild replays there). */
export const inlineProjections = (config: Pick<Config, 'PROJECTIONS'>): Projection[] =>
  config.PROJECTIONS === 'inline' ? consistentProjections : [];

/** Write-side effects every append makes in its own transaction, in either mode: not read models. */
export const writeSideProjections: InlineProjection[] = contextInlineEffects;

/** The uniqueness records every append keeps in its own transaction, in either mode. */
export const uniquenessOf: UniquenessRules = contextClaims;
