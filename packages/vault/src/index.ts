export { canonicalJson, DecryptionError } from './crypto.ts';
export { Vault, vaultMigrations, TenantKeysUnavailableError } from './vault.ts';
