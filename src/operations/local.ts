import { userInfo } from 'node:os';
import type { App } from '../app';
import { PolicyDenied } from '../errors';
import type { Caller } from './index';

/** The principal the operating-system account acts as, in local mode. */
export function localCaller(app: App): Caller {
  const user = userInfo().username;
  const principal = app.principals().byLocalUser(user);
  if (!principal) {
    throw new PolicyDenied(
      'identity.local-user-unknown',
      `operating-system user "${user}" is not an active principal in ${app.principals().file}; ask hospital IT to add it (localUser), or use --server with your certificate`,
    );
  }
  return { principal, authMethod: 'local-os-user' };
}
