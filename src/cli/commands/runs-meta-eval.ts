/**
 * `ehrbench runs meta-eval ID`: HealthBench's meta-evaluation of a completed run whose model was a
 * grader (adapter health_bench_meta): the grader's agreement with physicians beside the physicians'
 * agreement with each other, as simple-evals' healthbench_meta_eval.py reports them. Figures only.
 */
import type { CommandModule } from 'yargs';
import type { RunMetaEvaluation } from '../../operations';
import { type ClientArgs, withClient } from '../client';
import { formatScore, formatTable, type Io, printJson } from '../output';

type MetaEvalArgs = ClientArgs & { id: string };

type Figures = RunMetaEvaluation['model']['overall'];
type Ratio = Figures['pos']['f1'];

const cell = (r: Ratio | undefined) => (r === undefined || r.value === null ? '-' : `${formatScore(r.value)} (n ${Math.round(r.n)})`);

/** One row per rater and scope: the F1 of each class and the balanced F1, with their n. */
function rows(label: string, agreement: RunMetaEvaluation['model']): string[][] {
  const line = (scope: string, f: Figures) => [label, scope, cell(f.pos.f1), cell(f.neg.f1), cell(f.balanced.f1), cell(f.pos.precision), cell(f.pos.recall)];
  return [line('overall', agreement.overall), ...Object.entries(agreement.byCategory).map(([c, f]) => line(c, f))];
}

function printMetaEvaluation(io: Io, m: RunMetaEvaluation): void {
  io.stdout(`run ${m.runId}: ${m.rows} graded criteria (${m.ungraded} with a malformed grade, left out), ${m.notDone} not finished, ${m.physicians} physicians\n\n`);
  io.stdout(formatTable(['rater', 'scope', 'f1 met', 'f1 not met', 'balanced f1', 'precision met', 'recall met'], [...rows('grader', m.model), ...rows('physicians (mean)', m.physicianMean)]));
  io.stdout('\npairwise, as healthbench_meta_eval.py: the grader against every physician label, each physician against the others; --json for every figure\n');
}

export function metaEvalCommand(io: Io): CommandModule<ClientArgs, MetaEvalArgs> {
  return {
    command: 'meta-eval <id>',
    describe: "HealthBench's meta-evaluation of a completed run whose model was a grader: its agreement with physicians beside theirs with each other (figures only)",
    builder: (b) => b.positional('id', { type: 'string', demandOption: true }),
    handler: async (args) => {
      const m = await withClient(args, io, (c) => c.metaEvaluation(args.id), { writes: false });
      if (args.json) printJson(io, m);
      else printMetaEvaluation(io, m);
    },
  };
}
