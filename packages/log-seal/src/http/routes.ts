import { conflict, defineRoute, notFound, type Pool, type RouteDefinition } from '@tokenvault/platform';
import type { EventStore } from '@tokenvault/eventstore';
import { logIdParams, logProofSchema, logSigningKeySchema } from '@tokenvault/contracts';
import { findLogEvent } from '@tokenvault/audit';
import type { ReadModelConsistency } from '@tokenvault/cqrs';
import { buildProof } from '../proof.ts';
import type { SealSigner } from '../seal.ts';

/** GET /logs/{id}/proof and the seals' public key. */
export function logSealRoutes({
  appPool,
  ownerPool,
  store,
  consistency,
  signer,
}: {
  appPool: Pool;
  ownerPool: Pool;
  store: EventStore;
  consistency: ReadModelConsistency;
  signer: SealSigner | undefined;
}): RouteDefinition[] {
  return [
    defineRoute({
      method: 'get',
      path: '/logs/:id/proof',
      operationId: 'getLogProof',
      summary: 'The proof that a log row’s event is in the sealed event log, checkable offline',
      tag: 'Logs',
      permission: 'log:read',
      params: logIdParams,
      responses: {
        200: { description: 'The event as sealed, its Merkle path and its seal', schema: logProofSchema },
        404: { description: 'No such log row' },
        409: { description: 'The event is not sealed yet (or no longer matches its seal)' },
      },
      async handle({ principal, params }) {
        const headers = await consistency.beforeTrailingRead();
        const eventId = await findLogEvent(appPool, principal.tenantId, params.id);
        if (!eventId) throw notFound('No such log row.');
        // Only after the row was found under the tenant's row-level security: the seal and the
        // other leaves' hashes are everyone's.
        const outcome = await buildProof(ownerPool, store, eventId, params.id);
        if (outcome.kind === 'unsealed')
          throw conflict('The event is not sealed yet; try again in a moment.');
        if (outcome.kind === 'mismatch') throw conflict('The event no longer matches its seal.');
        return { status: 200, headers, body: outcome.proof };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/.well-known/tokenvault-log-key',
      operationId: 'getLogSigningKey',
      summary: 'The Ed25519 public key that signs the event log’s seals (no API key)',
      tag: 'Logs',
      permission: null,
      responses: {
        200: { description: 'The public key', schema: logSigningKeySchema },
        404: { description: 'Seals are not signed (no LOG_SIGNING_KEY)' },
      },
      handle() {
        if (!signer) throw notFound('The seals of this deployment are not signed.');
        return Promise.resolve({ status: 200, body: signer.describe() });
      },
    }),
  ];
}
