import { commandPrefix } from '../../command-prefix';
import type { CommandModule } from 'yargs';
import { runDemo } from '../../demo';
import type { RunProgress } from '../../runs';
import { dataHome } from '../../paths';
import type { GlobalArgs } from '../context';
import { type Io, printJson } from '../output';
import { interruptibly } from '../interrupt';
import { followLocal } from '../progress';
import { printSummaries } from './runs';

interface DemoArgs extends GlobalArgs {
  'max-instances'?: number;
}

export function demoCommand(io: Io): CommandModule<GlobalArgs, DemoArgs> {
  return {
    command: 'demo',
    describe: 'Run the public benchmarks end to end against a loopback demo model server (a stand-in, not a model)',
    builder: (y) => y.option('max-instances', { type: 'number', describe: 'Instances per benchmark (default: all)' }),
    handler: async (args) => {
      let current: string | undefined;
      const result = await interruptibly(
        io,
        (signal) =>
          runDemo({
            signal,
            onRun: (id) => (current = id),
            ...(args.json ? {} : { follow: (label: string, read: () => Promise<RunProgress>) => followLocal(io, label, read) }),
            home: dataHome(io.env),
            ...(args.config ? { configFile: args.config } : {}),
            env: io.env,
            ...(args['max-instances'] ? { maxInstances: args['max-instances'] } : {}),
            log: (line) => {
              if (!args.json) io.stderr(`${line}\n`);
            },
          }),
        () => current,
      );
      if (args.json) return printJson(io, result);
      io.stdout('\nehrbench demo: public MedHELM benchmarks through the full pipeline\n');
      io.stdout('(the model is a deterministic loopback stand-in: these scores only show the pipeline works)\n\n');
      printSummaries(io, result.summaries);
      io.stdout(`\nresults are in the store (${result.store}); see "${commandPrefix()} runs show <run id>"\n`);
    },
  };
}
