/** Who acts: a person identified by a client certificate or the local OS account, or the daemon itself. */
export const ROLES = ['admin', 'researcher', 'compliance', 'auditor', 'service'] as const;
export type Role = (typeof ROLES)[number];

export interface Actor {
  /** Principal id, e.g. `jdoe` from a certificate, `local:alice` for the OS user, `service:worker-1`. */
  principal: string;
  role: Role;
  authMethod: 'mtls' | 'local-os-user' | 'service';
}

export function serviceActor(name: string): Actor {
  return { principal: `service:${name}`, role: 'service', authMethod: 'service' };
}
