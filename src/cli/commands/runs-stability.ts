/**
 * `ehrbench runs stability ID`: the output stability of a run's repeat group (`--repeat K`): how often
 * the K answers to an instance were the same, how often its main score was, and the spread of the K
 * runs' means. Figures only; the runs' figures' visibility applies to all of them.
 */
import type { CommandModule } from 'yargs';
import type { StabilityView } from '../../operations';
import { type ClientArgs, withClient } from '../client';
import { formatScore, formatTable, type Io, printJson } from '../output';

type StabilityArgs = ClientArgs & { id: string };

const pct = (a: StabilityView['exactAgreement']) =>
  a === null ? '-' : `${(a.rate * 100).toFixed(1)}% (${a.count} of the instances; 95% CI ${(a.ci95.low * 100).toFixed(1)}-${(a.ci95.high * 100).toFixed(1)}%)`;

export function stabilityLines(s: StabilityView): string {
  const spread = s.spread ? `SD ${formatScore(s.spread.sd)}, range ${formatScore(s.spread.min)}-${formatScore(s.spread.max)}` : '- (fewer than two runs have a mean)';
  return [
    `repeat group ${s.groupId}: ${s.benchmarkId} on ${s.endpointId}, ${s.repeats} runs at temperature ${s.temperature}${s.complete ? '' : ' (not all completed: figures over what is finished so far)'}`,
    `  instances finished in every run: ${s.instances}`,
    `  same answer every time: ${pct(s.exactAgreement)}`,
    `  same ${s.mainMetric} every time: ${pct(s.scoreAgreement)}`,
    `  ${s.mainMetric} of the runs over those instances: ${spread}`,
    '',
    formatTable(
      ['run', 'status', s.mainMetric],
      s.runs.map((r) => [r.runId, r.status, formatScore(r.commonMean)]),
    ),
  ].join('\n');
}

export function stabilityCommand(io: Io): CommandModule<ClientArgs, StabilityArgs> {
  return {
    command: 'stability <id>',
    describe: 'Output stability of the repeat group of a run requested with --repeat K: same answers, same scores, spread of the means (figures only)',
    builder: (b) => b.positional('id', { type: 'string', demandOption: true }),
    handler: async (args) => {
      const s = await withClient(args, io, (c) => c.stability(args.id), { writes: false });
      if (args.json) printJson(io, s);
      else io.stdout(stabilityLines(s));
    },
  };
}
