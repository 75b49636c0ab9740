import type { OperationExamples } from '@tokenvault/platform';

const tenantId = '7d8a9f1e-2b3c-4d5e-8f90-a1b2c3d4e5f6';
const actorId = '1c2d3e4f-5a6b-4c7d-8e9f-0a1b2c3d4e5f';

/**
 * Hand-written examples of the key operations in the API reference (GET /docs); every other
 * body's example is generated from its schema (describeOperations).
 */
export const apiExamples: Record<string, OperationExamples> = {
  'post /tokens': {
    request: {
      type: 'card',
      data: { number: '4242424242424242', expiration_month: 12, expiration_year: 2030, cvc: '123' },
      metadata: { customer: 'c-1042' },
    },
    responses: {
      201: {
        id: '0b9e4c3e-5d0b-4a8e-9d4c-2f6f5b2a7c11',
        tenant_id: tenantId,
        type: 'card',
        containers: ['/pci/high/'],
        metadata: { customer: 'c-1042' },
        fingerprint: 'CmZgHbeqj3NBBNr2NPEjXR5C1qKBFTHqKa1ZpFrbZbFm',
        created_by: actorId,
        created_at: '2030-01-01T12:00:00.000Z',
        privacy: { classification: 'pci', impact_level: 'high', restriction_policy: 'mask' },
        card: {
          bin: '42424242',
          last4: '4242',
          brand: 'visa',
          funding: 'credit',
          expiration_month: 12,
          expiration_year: 2030,
        },
      },
    },
  },
  'post /tenants/self/invitations': { request: { email: 'new.colleague@example.com' } },
  'post /tenants/invitations/accept': {
    request: { token: '<the token from the e-mailed link>', first_name: 'Ada', last_name: 'Lovelace' },
  },
  'post /reactors/{id}/react': {
    request: { args: { card: '{{ 0b9e4c3e-5d0b-4a8e-9d4c-2f6f5b2a7c11 }}' } },
    responses: { 200: { raw: { charged: true } } },
  },
};
