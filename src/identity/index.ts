/** The folder's public surface: other folders import from here only. */
export { serviceActor } from './actor';
export type { Actor } from './actor';
export type { Role } from './actor';
export { hostOperator } from './actor';
export { initSitePki } from './site-pki';
export type { IssuedClient } from './site-pki';
export { prepareClientCertificate } from './site-pki';
export { removeClientCertificate } from './site-pki';
export { writeClientCertificate } from './site-pki';
export { createCa } from './pki';
export { issueCertificate } from './pki';
export { Revocations, type RevocationSubject } from './revocations';
export { completeLedgers, type LedgerEntry, missingFromLedger, missingFromStore, readLedgers, REVOCATION_LEDGER_FILE } from './revocation-ledger';
export { IssuedCertificates, type IssuedRecord, pemFingerprints } from './issued';
export { certificateFingerprint, siteClientCertificates } from './site-pki';
export { csrPublicKey, prepareCsrCertificate, writeSignedCertificate, type PreparedSignedClient } from './csr';
