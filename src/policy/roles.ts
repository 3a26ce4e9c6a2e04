/**
 * The roles a person may hold (access-policies/principals.json). The daemon's own processes act as
 * `service`, which no person holds; src/identity adds it to these.
 */
export const PRINCIPAL_ROLES = ['admin', 'researcher', 'compliance', 'auditor', 'clinician'] as const;
export type PrincipalRole = (typeof PRINCIPAL_ROLES)[number];
