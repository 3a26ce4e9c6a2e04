/** Endpoint secrets by reference: an environment variable or a file, never inline in a policy. */
import { readFileSync } from 'node:fs';
import { UserError } from '../errors';
import type { Endpoint } from '../egress';

export function resolveApiKey(endpoint: Endpoint, env: NodeJS.ProcessEnv = process.env): string | undefined {
  const auth = endpoint.auth;
  if (auth.type === 'none' || auth.type === 'entra-id') return undefined;
  if (auth.env) {
    const value = env[auth.env]?.trim();
    if (!value) throw new UserError('endpoint.credential-missing', `endpoint ${endpoint.id}: environment variable ${auth.env} is not set; export it before starting ehrbench`);
    return value;
  }
  if (auth.file) {
    let text: string;
    try {
      text = readFileSync(auth.file, 'utf8');
    } catch (err) {
      throw new UserError('endpoint.credential-missing', `endpoint ${endpoint.id}: key file ${auth.file} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
    }
    const value = text.split(/\r?\n/)[0]?.trim();
    if (!value) throw new UserError('endpoint.credential-missing', `endpoint ${endpoint.id}: key file ${auth.file} is empty`);
    return value;
  }
  throw new UserError('endpoint.credential-missing', `endpoint ${endpoint.id}: auth needs env or file`);
}
