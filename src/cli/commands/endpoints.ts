import type { CommandModule } from 'yargs';
import { loadConfig } from '../../config';
import { loadEndpointPolicy } from '../../egress';
import type { GlobalArgs } from '../context';
import { formatTable, type Io, printJson } from '../output';

interface PolicyArgs extends GlobalArgs {
  policy?: string;
}

export function policyFile(args: PolicyArgs, io: Io): string {
  if (args.policy) return args.policy;
  return loadConfig({ ...(args.config ? { file: args.config } : {}), env: io.env }).policies.endpoints;
}

export function endpointsCommand(io: Io): CommandModule<GlobalArgs, GlobalArgs> {
  return {
    command: 'endpoints <command>',
    describe: 'The model endpoint allowlist',
    builder: (y) =>
      y
        .command<PolicyArgs>({
          command: 'list',
          describe: 'List allowlisted endpoints with their classification',
          builder: (b) => b.option('policy', { type: 'string', describe: 'Endpoint policy file (default: from the config)' }),
          handler: async (args) => {
            const policy = loadEndpointPolicy(policyFile(args, io));
            if (args.json) return printJson(io, policy.endpoints.map(({ policyFile: _p, ...e }) => e));
            io.stdout(
              formatTable(
                ['id', 'provider', 'url', 'deployment/model', 'in VPC', 'BAA', 'max tier', 'development'],
                policy.endpoints.map((e) => [
                  e.id,
                  e.provider,
                  e.url,
                  e.deployment ?? e.model ?? '-',
                  e.classification.inVpc ? 'yes' : 'no',
                  e.classification.baa ? 'yes' : 'no',
                  e.classification.maxTier,
                  e.classification.development ? 'yes' : 'no',
                ]),
              ),
            );
          },
        })
        .demandCommand(1, 'name a subcommand: list'),
    handler: () => undefined,
  };
}
