import { userInfo } from 'node:os';
import { PRINCIPAL_ROLES } from '../policy';

/** Who acts: a person identified by a client certificate or the local OS account, or the daemon itself. */
export const ROLES = [...PRINCIPAL_ROLES, 'service'] as const;
export type Role = (typeof ROLES)[number];

export interface Actor {
  /** Principal id, e.g. `jdoe` from a certificate, `local:alice` for the OS user, `service:worker-1`. */
  principal: string;
  role: Role;
  authMethod: 'mtls' | 'local-os-user' | 'service';
}

/** Whoever runs a local command on the host (holds the CA key, probes endpoints): that OS account. */
export function hostOperator(): Actor {
  return { principal: `local:${userInfo().username}`, role: 'admin', authMethod: 'local-os-user' };
}

export function serviceActor(name: string): Actor {
  return { principal: `service:${name}`, role: 'service', authMethod: 'service' };
}
