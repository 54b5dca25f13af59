/*
 * DPoP (RFC 9449): proofs (proof.ts, htu.ts), server nonces (nonce.ts), and what the token
 * endpoint binds tokens to (binding.ts). proof.ts, htu.ts and nonce.ts import nothing of the
 * engine, so that a resource server can check a proof (with `ath`) the same way; the allow-list
 * and the `htu` comparison are the resource-server module's own (src/resource-server/dpop-rules.ts).
 */
export { accessTokenHash, DpopProofError, jwkThumbprint, PROOF_MAX_AGE_MS, PROOF_MAX_SKEW_MS, replayKey, singleProof, verifyProof } from './proof.js';
export type { ProofExpectations, ProofFailure, VerifiedProof } from './proof.js';
export { htuMatches, normaliseHtu } from './htu.js';
// The proof algorithms, one list with the resource-server module's (RFC 9449 §4.3 point 5).
export { DPOP_ALGORITHMS } from '../../resource-server/dpop-rules.js';
export { DpopNonces, NONCE_SLOT_MS } from './nonce.js';
export { BEARER, BOUND_CODE, BOUND_REFRESH, checkBoundKey, DpopChecks, type BoundKeyRefusals, type DpopPresentation, type TokenBinding } from './binding.js';
