import { conflict, defineRoute, notFound, type Pool, type RouteDefinition } from '@tokenvault/platform';
import type { EventStore } from '@tokenvault/eventstore';
import { logIdParams, logProofSchema, logSigningKeySchema } from '@tokenvault/contracts';
import { findLogEvent } from '@tokenvault/audit';
import type { ReadModelConsistency } from '@tokenvault/cqrs';
import { buildProof } from '../proof.ts';
import type { LogSigningKey } from '../tree-head.ts';

/** GET /logs/{id}/proof and the tree heads' public key. */
export function logProofRoutes({
  appPool,
  ownerPool,
  store,
  consistency,
  signingKey,
}: {
  appPool: Pool;
  ownerPool: Pool;
  store: EventStore;
  consistency: ReadModelConsistency;
  signingKey: LogSigningKey | undefined;
}): RouteDefinition[] {
  return [
    defineRoute({
      method: 'get',
      path: '/logs/:id/proof',
      operationId: 'getLogProof',
      summary: 'The proof that a log row’s event is in the verifiable event log, checkable offline',
      tag: 'Logs',
      permission: 'log:read',
      returnsSensitive: [],
      params: logIdParams,
      responses: {
        200: {
          description: 'The event as logged, its Merkle path and its tree head',
          schema: logProofSchema,
        },
        404: { description: 'No such log row' },
        409: { description: 'No tree head covers the event yet (or it no longer matches its tree head)' },
      },
      async handle({ principal, params }) {
        const headers = await consistency.beforeTrailingRead();
        const eventId = await findLogEvent(appPool, principal.tenantId, params.id);
        if (!eventId) throw notFound('No such log row.');
        // Only after the row was found under the tenant's row-level security: the tree head and
        // the other leaves' hashes are everyone's.
        const outcome = await buildProof(ownerPool, store, eventId, params.id);
        if (outcome.kind === 'not-covered-yet')
          throw conflict('No tree head covers the event yet; try again in a moment.');
        if (outcome.kind === 'mismatch') throw conflict('The event no longer matches its tree head.');
        return { status: 200, headers, body: outcome.proof };
      },
    }),
    defineRoute({
      method: 'get',
      path: '/.well-known/tokenvault-log-key',
      operationId: 'getLogSigningKey',
      summary: 'The Ed25519 public key that signs the event log’s tree heads (no API key)',
      tag: 'Logs',
      permission: null,
      returnsSensitive: [],
      responses: {
        200: { description: 'The public key', schema: logSigningKeySchema },
        404: { description: 'Tree heads are not signed (no LOG_SIGNING_KEY)' },
      },
      handle() {
        if (!signingKey) throw notFound('The tree heads of this deployment are not signed.');
        return Promise.resolve({ status: 200, body: signingKey.describe() });
      },
    }),
  ];
}
