/*
 * DPoP (RFC 9449): proofs (proof.ts, htu.ts), server nonces (nonce.ts), and what the token
 * endpoint binds tokens to (binding.ts). proof.ts, htu.ts and nonce.ts import nothing of the
 * engine, so that a resource server can check a proof (with `ath`) the same way.
 */
export { accessTokenHash, DPOP_ALGORITHMS, DpopProofError, jwkThumbprint, PROOF_MAX_AGE_MS, PROOF_MAX_SKEW_MS, replayKey, singleProof, verifyProof } from './proof.js';
export type { ProofExpectations, ProofFailure, VerifiedProof } from './proof.js';
export { htuMatches, normaliseHtu } from './htu.js';
export { DpopNonces, NONCE_SLOT_MS } from './nonce.js';
export { BEARER, checkBoundRefresh, DpopChecks, type DpopPresentation, type TokenBinding } from './binding.js';
