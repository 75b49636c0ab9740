/**
 * The key operations' events (no key material in any): appended by `npm run keys` to the tenant's
 * key stream; the audit log has a row for each, and they are published on the tenancy topic.
 */
export interface TenantKeyRotatedData {
  tenant_id: string;
  version: number;
  previous_version: number;
  token_keys_rewrapped: number;
  rotated_at: string;
}

export interface TenantKeyRewrappedData {
  tenant_id: string;
  version: number;
  master_key_version: string;
  previous_master_key_version: string;
  rewrapped_at: string;
}

export const tenantKeysStream = (tenantId: string) => `tenancy.keys-${tenantId}`;

/** Every event type of the key store. */
export const vaultEventTypes = ['TenantKeyRotated', 'TenantKeyRewrapped'] as const;
