import type { Projection } from '@tokenvault/cqrs';
import { tenancyProjection } from '@tokenvault/tenancy';
import { tokensProjection } from '@tokenvault/tokens';

/** Every read model, applied by one projector under one checkpoint. */
export const allProjections: Projection[] = [tenancyProjection, tokensProjection];
export const readModelsProjectorName = 'read-models';
