import { UserError } from '../../src/errors';

/** The UserError that `p` rejects with; any other rejection, or none, fails the test. */
export async function failure(p: Promise<unknown>): Promise<UserError> {
  try {
    await p;
  } catch (err) {
    if (err instanceof UserError) return err;
    throw err;
  }
  throw new Error('expected a UserError');
}
