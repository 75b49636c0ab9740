// What every part of the console shares: the member's session and the tenant they work in. Held
// here alone, read and changed through these functions.

export interface Membership {
  tenant_id: string;
  tenant_name: string;
  role: string;
}
export interface Session {
  expires_at: string;
  user: { id: string; email: string; first_name?: string; last_name?: string };
  memberships: Membership[];
}

const state: { session: Session | undefined; tenantId: string | undefined } = {
  session: undefined,
  // The tenant chosen last in this tab survives a reload.
  tenantId: sessionStorage.getItem('tenant') ?? undefined,
};

export function currentSession(): Session | undefined {
  return state.session;
}

export function setSession(session: Session | undefined): void {
  state.session = session;
}

/** The tenant the API calls act on (their SVC-TENANT-ID). */
export function currentTenantId(): string | undefined {
  return state.tenantId;
}

export function setTenantId(tenantId: string | undefined): void {
  state.tenantId = tenantId;
  if (tenantId) sessionStorage.setItem('tenant', tenantId);
}
