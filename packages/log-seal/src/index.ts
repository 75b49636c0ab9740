export { logSealContext, type LogSealContextDeps } from './context.ts';
export { logSealMigrations } from './migrations.ts';
export {
  canonicalJson,
  eventHashOf,
  sealedEncodingOf,
  leafHashOf,
  type SealedEventEncoding,
} from './canonical.ts';
export { merkleRoot, inclusionPath, verifyInclusion } from './merkle.ts';
export {
  SealSigner,
  genesisHash,
  publicKeyFrom,
  sealEncodingOf,
  sealHashOf,
  verifySealSignature,
  type Seal,
  type SealContent,
} from './seal.ts';
export { createLogSealer, logSealHandler, logSealerName, sealBatch } from './sealer.ts';
export { verifyLog, type LogVerification, type TrustedSeal, type VerifyLogOptions } from './verify.ts';
export { buildProof, type ProofOutcome } from './proof.ts';
export { logSealRoutes } from './http/routes.ts';
export { readSeals } from './postgres/read-seals.ts';
