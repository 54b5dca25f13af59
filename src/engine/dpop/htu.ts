// One comparison of `htu` for the token endpoint and the resource-server module (RFC 9449 §4.3 point 9).
export { htuMatches, normaliseHtu } from '../../resource-server/dpop-rules.js';
