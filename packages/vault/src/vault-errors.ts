import { Problem } from '@tokenvault/platform';

/**
 * A 401 where it reaches a client: a key of a tenant deleted a moment ago (and not yet forgotten
 * by every process's caches) is a key of no tenant.
 */
export class TenantKeysUnavailableError extends Problem {
  readonly tenantId: string;
  constructor(tenantId: string) {
    super(401, 'unauthorized', 'Unauthorized', 'The tenant of this API key no longer exists.');
    this.tenantId = tenantId;
    this.name = 'TenantKeysUnavailableError';
  }
}

/** The token's key was destroyed (deleted, expired): the token answers as a deleted one. */
export class TokenKeyDestroyedError extends Problem {
  constructor() {
    super(404, 'not-found', 'Not Found', 'No token with this id.');
    this.name = 'TokenKeyDestroyedError';
  }
}
