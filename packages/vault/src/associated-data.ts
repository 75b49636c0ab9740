// What associated data binds each wrapped key to: a wrapped key opens only as the key of the
// tenant (and token) it was made for.

/** Version 1 keeps the associated data of before key versions. */
const dataKeyAd = (tenantId: string, version: number) =>
  version === 1 ? `data-key:${tenantId}` : `data-key:${tenantId}:${version}`;
const fingerprintKeyAd = (tenantId: string, version: number) =>
  version === 1 ? `fingerprint-key:${tenantId}` : `fingerprint-key:${tenantId}:${version}`;

/** A tenant's data and fingerprint keys, wrapped by the master keyring (and rewrapped by rotation). */
export const tenantKeyAd = { data: dataKeyAd, fingerprint: fingerprintKeyAd };

/** A token's own key, wrapped by its tenant's data key. */
export const tokenKeyAd = (tenantId: string, tokenId: string) => `token-key:${tenantId}:${tokenId}`;
