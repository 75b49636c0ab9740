import type { Projection } from '@tokenvault/cqrs';
import { tenancyProjection } from '@tokenvault/tenancy';
import { tokensProjection } from '@tokenvault/tokens';
import { auditProjection } from '@tokenvault/audit';
import { reactorsProjection } from '@tokenvault/reactors';

/** Every read model, applied by one projector under one checkpoint. */
export const allProjections: Projection[] = [
  tenancyProjection,
  tokensProjection,
  reactorsProjection,
  auditProjection,
];
export const readModelsProjectorName = 'read-models';
