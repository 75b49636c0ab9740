export { verifiableLogContext, type VerifiableLogContextDeps } from './context.ts';
export { verifiableLogMigrations } from './migrations.ts';
export {
  canonicalJson,
  eventHashOf,
  loggedEncodingOf,
  leafHashOf,
  type LoggedEventEncoding,
} from './canonical.ts';
export { merkleRoot, inclusionPath, verifyInclusion } from './merkle.ts';
export {
  LogSigningKey,
  genesisHash,
  publicKeyFrom,
  treeHeadEncodingOf,
  treeHeadHashOf,
  verifyTreeHeadSignature,
  type TreeHead,
  type TreeHeadContent,
} from './tree-head.ts';
export {
  createTreeHeadSigner,
  treeHeadHandler,
  treeHeadSignerName,
  nextTreeHead,
} from './tree-head-signer.ts';
export { verifyLog, type LogVerification, type TrustedTreeHead, type VerifyLogOptions } from './verify.ts';
export { buildProof, type ProofOutcome } from './proof.ts';
export { logProofRoutes } from './http/log-proof.routes.ts';
export { readTreeHeads } from './postgres/read-tree-heads.ts';
