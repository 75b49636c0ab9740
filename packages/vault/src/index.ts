export { canonicalJson, DecryptionError, derivedKey, open, seal } from './crypto.ts';
export { Vault, type VaultOptions } from './vault.ts';
export { vaultMigrations } from './migrations.ts';
export { TenantKeysUnavailableError, TokenKeyDestroyedError } from './vault-errors.ts';
export { destroyTenantKeysWithin } from './tenant-keys.ts';
export { LocalKeyring, MissingMasterKeyError, parseMasterKeys, type MasterKeyring } from './keyring.ts';
export { HsmUnavailableError, Pkcs11Keyring, type Pkcs11Options } from './pkcs11.ts';
export {
  destroyExpiredTokenKeys,
  destroyTokenKey,
  orphanTokenKeys,
  setTokenKeyExpiry,
  withdrawTokenKey,
  storeNewTokenKey,
  storeTokenKey,
  storeTokenKeysStatement,
  tokenKeyRows,
  tokenKeyInvalidation,
  tokenOfKeyInvalidation,
  type NewTokenKey,
  type SealedToken,
  type StoredTokenKey,
  type WrappedTokenKey,
} from './token-keys.ts';
export {
  addTenantKeyVersion,
  keyStatus,
  rewrapBatch,
  rewrapTokenKeys,
  rewrapTokenKeysBatch,
  tenantKeysToRewrap,
  tenantsWithKeys,
  type KeyStatus,
} from './rotation.ts';
export { openMasterKeyring } from './open-keyring.ts';
export {
  tenantKeysStream,
  vaultEventTypes,
  type TenantKeyRewrappedData,
  type TenantKeyRotatedData,
} from './vault.events.ts';
