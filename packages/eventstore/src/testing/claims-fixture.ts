import type { NewEvent, UniquenessRules } from '../port.ts';

/*
 * The uniqueness rules of the contract suite's claim cases, apart from contract.ts (which needs
 * vitest) so that crash-append.ts, run as a child process, keeps claims by the very same rules.
 */

export const contractClaimScope = 'contract-email';
export const contractTenant = '00000000-0000-4000-8000-0000000000cc';

/** Invited claims its address for its invitation; Withdrawn releases what its invitation holds. */
export const contractUniquenessRules: UniquenessRules = (event) => {
  const data = event.data as { invitation: string; email?: string };
  if (event.type === 'Invited') {
    return {
      claim: [
        { scope: contractClaimScope, key: data.email!, holder: data.invitation, tenant_id: contractTenant },
      ],
    };
  }
  if (event.type === 'Withdrawn')
    return { releaseHeldBy: [{ scope: contractClaimScope, holder: data.invitation }] };
  return undefined;
};

export function invited(invitation: string, email: string): NewEvent {
  return { type: 'Invited', data: { invitation, email }, metadata: { tenant_id: contractTenant } };
}

export function withdrawn(invitation: string): NewEvent {
  return { type: 'Withdrawn', data: { invitation }, metadata: { tenant_id: contractTenant } };
}
