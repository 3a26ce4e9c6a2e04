/**
 * Issuing client certificates of the site CA: audited and recorded before they exist anywhere but in
 * memory, and mapped in principals.json (`pki issue`, `pki sign` on the host; POST /v1/certificates).
 */
export { issuanceFailed, mapToSiteCa, type MappingRule, recordMapping, safeCode } from './mapping';
export { type ReturnedCertificate, type SignedCertificate, signForCaller, type SignInput, signOnHost } from './sign';
