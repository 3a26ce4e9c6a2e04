import type { CommandModule } from 'yargs';
import { CLIENT_OPTIONS, type ClientArgs, withClient } from '../client';
import type { GlobalArgs } from '../context';
import { type Io, printJson } from '../output';

export function whoamiCommand(io: Io): CommandModule<GlobalArgs, ClientArgs> {
  return {
    command: 'whoami',
    describe: 'Show which principal and roles you act as',
    builder: (y) => y.options(CLIENT_OPTIONS),
    handler: async (args) => {
      const me = await withClient(args, io, (c) => c.whoami(), { writes: false });
      if (args.json) return printJson(io, me);
      io.stdout(`${me.principal}${me.displayName ? ` (${me.displayName})` : ''}: ${me.roles.join(', ')} via ${me.authMethod}\n`);
    },
  };
}
