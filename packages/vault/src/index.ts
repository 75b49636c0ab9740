export { canonicalJson, DecryptionError } from './crypto.ts';
export { Vault, vaultMigrations, TenantKeysUnavailableError, destroyTenantKeysWithin } from './vault.ts';
