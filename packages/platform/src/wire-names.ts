import type { IncomingHttpHeaders } from 'node:http';
import type { FieldErrors } from './domain-errors.ts';
import { badRequest, type Problem } from './errors.ts';

/**
 * Basis Theory's header names, accepted as compatibility names of the service's own so that its
 * SDKs work with only their base URL changed (docs/api-contract.md, "Compatibility names"). Each
 * is moved to the service's name as a request comes in: nothing after that step (routes, guards,
 * logs, the proxy's forwarding) sees a BT-* header, so none can reach a destination.
 */
export const compatibilityHeaderNames = {
  'bt-api-key': 'svc-api-key',
  'bt-idempotency-key': 'svc-idempotency-key',
  'bt-proxy-key': 'svc-proxy-key',
  'bt-proxy-url': 'svc-proxy-url',
  'bt-trace-id': 'x-request-id',
} as const satisfies Record<string, string>;

/**
 * Renames the compatibility headers of a request to the service's names, in place. Both names of
 * one header with different values is a 400: which of the two the caller meant is not guessed.
 */
export function adoptCompatibilityHeaders(headers: IncomingHttpHeaders): Problem | undefined {
  let errors: FieldErrors | undefined;
  for (const [compatibilityName, ownName] of Object.entries(compatibilityHeaderNames)) {
    const value = headers[compatibilityName];
    if (value === undefined) continue;
    delete headers[compatibilityName];
    const own = headers[ownName];
    if (own === undefined) headers[ownName] = value;
    else if (String(own) !== String(value)) {
      (errors ??= {})[`headers.${compatibilityName}`] = [
        `Differs from ${ownName.toUpperCase()}: send one of the two names, or the same value in both`,
      ];
    }
  }
  return errors && badRequest('A header is given under two names with different values.', errors);
}
