import type { CommandModule } from 'yargs';
import { Catalog } from '../../catalog';
import { loadConfig } from '../../config';
import type { GlobalArgs } from '../context';
import { formatTable, type Io, printJson } from '../output';

interface ListArgs extends GlobalArgs {
  tier?: string;
  category?: string;
}

function catalogFor(args: GlobalArgs, io: Io): Catalog {
  const config = loadConfig({ ...(args.config ? { file: args.config } : {}), env: io.env });
  return Catalog.load(config.catalogDirs);
}

export function benchmarksCommand(io: Io): CommandModule<GlobalArgs, GlobalArgs> {
  return {
    command: 'benchmarks <command>',
    describe: 'The benchmark catalog',
    builder: (y) =>
      y
        .command<ListArgs>({
          command: 'list',
          describe: 'List benchmarks with category, tier and main metric',
          builder: (b) =>
            b
              .option('tier', { choices: ['public', 'approval-required', 'private'], describe: 'Only this access tier' })
              .option('category', { type: 'string', describe: 'Only this MedHELM category' }),
          handler: async (args) => {
            const list = catalogFor(args, io)
              .list()
              .filter((b) => !args.tier || b.definition.tier === args.tier)
              .filter((b) => !args.category || b.definition.category === args.category);
            if (args.json) {
              return printJson(io, list.map((b) => ({ ...b.definition, definitionHash: b.definitionHash, templateHash: b.templateHash })));
            }
            io.stdout(
              formatTable(
                ['id', 'name', 'category / subcategory', 'tier', 'main metric'],
                list.map((b) => [b.definition.id, b.definition.displayName, `${b.definition.category} / ${b.definition.subcategory}`, b.definition.tier, b.definition.metrics.main]),
              ),
            );
          },
        })
        .command<GlobalArgs & { id: string }>({
          command: 'show <id>',
          describe: 'Show one benchmark definition',
          builder: (b) => b.positional('id', { type: 'string', demandOption: true }),
          handler: async (args) => {
            const b = catalogFor(args, io).get(args.id);
            const out = { ...b.definition, definitionHash: b.definitionHash, templateHash: b.templateHash, template: b.template };
            if (args.json) return printJson(io, out);
            const d = b.definition;
            io.stdout(
              [
                `${d.displayName} (${d.id} v${d.version})`,
                `  ${d.category} / ${d.subcategory}; tier ${d.tier}; split ${d.split}`,
                `  main metric ${d.metrics.main}${d.metrics.secondary?.length ? `; also ${d.metrics.secondary.join(', ')}` : ''}`,
                `  data: ${d.dataset.format} via adapter ${d.dataset.adapter} from ${b.dataPath}`,
                `  references: ${d.references}`,
                `  definition sha256 ${b.definitionHash}`,
                `  template sha256   ${b.templateHash}`,
                '',
                'Prompt template:',
                b.template,
              ].join('\n') + '\n',
            );
          },
        })
        .demandCommand(1, 'name a subcommand: list or show'),
    handler: () => undefined,
  };
}
