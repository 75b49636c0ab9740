import type { Projection } from '@tokenvault/cqrs';
import { tenancyProjection } from '@tokenvault/tenancy';
import { tokensProjection } from '@tokenvault/tokens';
import { auditProjection } from '@tokenvault/audit';

/** Every read model, applied by one projector under one checkpoint. */
export const allProjections: Projection[] = [tenancyProjection, tokensProjection, auditProjection];
export const readModelsProjectorName = 'read-models';
