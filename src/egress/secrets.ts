/**
 * Endpoint secrets by reference, held to one place. An endpoint's secret is sent to that endpoint: an
 * `auth.file` naming the audit MAC key once sent it out as a bearer token. So:
 *   - auth.file must resolve, every link followed, inside the secrets directory (config secrets.dir);
 *   - it may never be one of the daemon's own keys or credentials (keys.dir, the site PKI, the TLS
 *     key, the de-identification secret, the database URL and password files), even inside that
 *     directory: systemd's credentials folder holds pgpass beside the endpoint keys;
 *   - auth.env may never name the daemon's own variables (EHRBENCH_*, PGPASSWORD, the database URL's).
 * Checked when the policy is loaded (naming the rule), and again on the file actually opened when the
 * secret is read, so a link swapped in after the load is refused too. Messages name files, never contents.
 */
import { closeSync, constants, fstatSync, openSync, readFileSync } from 'node:fs';
import { openedPath, realPath, within } from '../confine';
import type { SecretPlaces } from '../config';
import { UserError } from '../errors';
import type { RuleId } from '../policy';

export type { SecretPlaces } from '../config';

type SecretRule = Extract<RuleId, 'policy.secret-outside-secrets-dir' | 'policy.secret-is-daemon-key'>;

export interface SecretProblem {
  rule: SecretRule;
  reason: string;
}

/** What is wrong with reading an endpoint secret from `file`, or undefined when it may be read. */
export function secretFileProblem(file: string, places: SecretPlaces | undefined): SecretProblem | undefined {
  if (!places) {
    return { rule: 'policy.secret-outside-secrets-dir', reason: `${file}: no secrets directory is configured; load the policy with its configuration (config secrets.dir, --config)` };
  }
  const real = realPath(file);
  const via = real === file ? '' : ` (resolves to ${real})`;
  const own = places.daemonFiles.find((d) => within(real, realPath(d.path)));
  if (own) {
    return { rule: 'policy.secret-is-daemon-key', reason: `${file}${via} is ${own.what}, never an endpoint's secret; put the endpoint's own key in ${places.dir}` };
  }
  const dir = realPath(places.dir);
  if (real === dir || !within(real, dir)) {
    return { rule: 'policy.secret-outside-secrets-dir', reason: `${file}${via} is outside the secrets directory ${places.dir} (config secrets.dir); put the endpoint's key there` };
  }
  return undefined;
}

/** Refused as auth.env with or without a configuration: ehrbench's own variables and libpq's password. */
const DAEMON_VARIABLES = ['EHRBENCH_DATABASE_URL', 'PGPASSWORD'];

/** What is wrong with reading an endpoint secret from the variable `name`, or undefined. */
export function secretVariableProblem(name: string, places: SecretPlaces | undefined): SecretProblem | undefined {
  const upper = name.toUpperCase();
  const daemon = [...DAEMON_VARIABLES, ...(places?.daemonVariables ?? [])].map((v) => v.toUpperCase());
  if (!upper.startsWith('EHRBENCH_') && !daemon.includes(upper)) return undefined;
  return { rule: 'policy.secret-is-daemon-key', reason: `${name} holds the daemon's own configuration or database credentials, never an endpoint's secret; use a variable of the endpoint's own` };
}

/** Throws the policy error for a reference that breaks a rule: one line, the field, the rule. */
export function refuseSecret(where: string, problem: SecretProblem | undefined): void {
  if (problem) throw new UserError('policy.invalid', `${where}: ${problem.reason} (rule ${problem.rule})`);
}

/**
 * Reads the first line of a secret file, checking the file actually opened: Linux names it in
 * /proc/self/fd, so a link changed between the check and the read cannot redirect it; elsewhere the
 * name is resolved again right after opening. Non-blocking open: a FIFO put in its place cannot hang
 * the daemon. `endpointId` and `what` name the secret in errors.
 */
export function readSecretFile(endpointId: string, file: string, places: SecretPlaces | undefined, what: string): string {
  refuseSecret(`endpoint ${endpointId}: auth.file`, secretFileProblem(file, places));
  let fd: number;
  try {
    fd = openSync(file, constants.O_RDONLY | constants.O_NONBLOCK);
  } catch (err) {
    throw new UserError('endpoint.credential-missing', `endpoint ${endpointId}: ${what} file ${file} cannot be read (${(err as NodeJS.ErrnoException).code ?? 'error'})`);
  }
  try {
    refuseSecret(`endpoint ${endpointId}: auth.file`, secretFileProblem(openedPath(fd, file), places));
    if (!fstatSync(fd).isFile()) throw new UserError('endpoint.credential-missing', `endpoint ${endpointId}: ${what} file ${file} is not a regular file`);
    return readFileSync(fd, 'utf8');
  } finally {
    closeSync(fd);
  }
}
