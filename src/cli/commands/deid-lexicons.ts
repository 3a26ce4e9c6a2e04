/**
 * `ehrbench deid lexicons propose --gold FILE --out DIR [--train-share 0.5] [--seed S] [--json]`: the
 * privacy office's annotated sample becomes reviewable site lexicons (src/deid/proposal.ts). The
 * subjects are split by a seeded hash; the staff, facility, place and street lists are made from the
 * gold spans of the training part, one entry a line with how often it was seen (never the text around
 * it), and `proposal.json` names the training subjects as hashes, so that `deid eval --holdout-by
 * subject --proposal DIR/proposal.json` measures the lists on the subjects they were not made from.
 *
 * The folder is written whole or not at all (a temporary folder beside it, renamed), mode 0700 with
 * files 0600: the lists name the site's staff and places. The terminal gets counts only.
 */
import { mkdirSync, readdirSync, readFileSync, renameSync, rmSync, writeFileSync } from 'node:fs';
import { basename, dirname, join, resolve } from 'node:path';
import type { CommandModule } from 'yargs';
import { listFile, propose, readGold, SITE_LEXICON_KINDS } from '../../deid';
import { UserError } from '../../errors';
import type { GlobalArgs } from '../context';
import { type Io, printJson } from '../output';

interface ProposeArgs extends GlobalArgs {
  gold: string;
  out: string;
  'train-share': number;
  seed: string;
}

/** The folder must be new (or empty): a proposal never mixes with files already there. */
function checkOut(out: string): void {
  let entries: string[];
  try {
    entries = readdirSync(out);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return;
    if ((err as NodeJS.ErrnoException).code === 'ENOTDIR') throw new UserError('cli.usage', `--out ${out} is a file; give a new folder for the proposed lists`);
    throw new UserError('deid.proposal-unwritable', `${out}: cannot read (${(err as NodeJS.ErrnoException).code ?? 'error'}); give a new folder for the proposed lists`);
  }
  if (entries.length > 0) throw new UserError('cli.usage', `--out ${out} is not empty; give a new folder (a proposal never overwrites lists under review)`);
}

function writeFolder(out: string, files: Record<string, string>): void {
  const tmp = join(dirname(out), `.${basename(out)}.${process.pid}.tmp`);
  try {
    mkdirSync(tmp, { recursive: true, mode: 0o700 });
    for (const [name, text] of Object.entries(files)) writeFileSync(join(tmp, name), text, { mode: 0o600, flag: 'wx' });
    rmSync(out, { recursive: true, force: true }); // an empty folder, checked above
    renameSync(tmp, out);
  } catch (err) {
    rmSync(tmp, { recursive: true, force: true });
    throw new UserError('deid.proposal-unwritable', `${out}: cannot write the proposal (${(err as NodeJS.ErrnoException).code ?? 'error'}); nothing was written`);
  }
}

export function deidLexiconsCommand(io: Io): CommandModule<GlobalArgs, GlobalArgs> {
  const proposeCommand: CommandModule<GlobalArgs, ProposeArgs> = {
    command: 'propose',
    describe: "Propose the site's staff, facility, place and street lists from an annotated sample (half its subjects; the rest stay for deid eval --holdout-by subject)",
    builder: (y) =>
      y
        .usage('$0 deid lexicons propose --gold FILE --out DIR [--train-share 0.5] [--seed S] [--json]')
        .option('gold', { type: 'string', demandOption: true, describe: 'The annotated sample, as deid eval reads it (NAME:clinician and LOCATION:hospital/other/city/street spans feed the lists)' })
        .option('out', { type: 'string', demandOption: true, describe: 'A new folder for staff.txt, facilities.txt, places.txt, streets.txt and proposal.json' })
        .option('train-share', { type: 'number', default: 0.5, describe: 'Share of the subjects the lists are made from (the others are held out for deid eval)' })
        .option('seed', { type: 'string', default: 'ehrbench', describe: 'Seed of the split of subjects (the same seed makes the same split)' })
        .epilog('Prints counts only. Review the lists, then name them in deid.siteLexicons; measure them with `deid eval --gold FILE --holdout-by subject --proposal DIR/proposal.json`.'),
    handler: (args) => {
      const share = args['train-share'];
      if (!Number.isFinite(share) || share <= 0 || share >= 1) throw new UserError('cli.usage', `--train-share ${share} must be between 0 and 1 (exclusive): some subjects must be left to measure on`);
      if (args.seed.length === 0 || args.seed.length > 100) throw new UserError('cli.usage', '--seed must be 1 to 100 characters');
      const goldFile = resolve(args.gold);
      const out = resolve(args.out);
      const docs = readGold(goldFile);
      if (docs.length === 0) throw new UserError('deid.gold-invalid', `${args.gold}: no documents; write one JSON line per note or "=== note ID" sections of marked text`);
      checkOut(out);
      const proposal = propose(docs, readFileSync(goldFile), { trainShare: share, seed: args.seed });
      const { manifest } = proposal;
      if (manifest.split.trainingSubjects === 0 || manifest.split.trainingSubjects === manifest.gold.subjects)
        throw new UserError('cli.usage', `${args.gold}: ${manifest.gold.subjects} subject(s) cannot be split by --train-share ${share}; annotate more subjects or change the share`);
      const files: Record<string, string> = { 'proposal.json': JSON.stringify(manifest, null, 2) + '\n' };
      for (const kind of SITE_LEXICON_KINDS) files[`${kind}.txt`] = listFile(kind, proposal.lists[kind], manifest);
      writeFolder(out, files);
      if (args.json) return printJson(io, { out, ...manifest, trainingSubjects: undefined });
      const counts = SITE_LEXICON_KINDS.map((k) => `${k} ${manifest.lists[k].entries}${manifest.lists[k].needCue ? ` (${manifest.lists[k].needCue} need a cue)` : ''}`).join(', ');
      io.stdout(
        `Proposed from ${manifest.split.trainingSubjects} of ${manifest.gold.subjects} subjects into ${out}: ${counts}\n` +
          `Review the lists, name them in deid.siteLexicons, then measure them on the other subjects:\n` +
          `  ehrbench deid eval --gold ${args.gold} --holdout-by subject --proposal ${join(out, 'proposal.json')}\n`,
      );
    },
  };
  return {
    command: 'lexicons',
    describe: "The site's lexicons: propose them from the privacy office's annotated sample",
    builder: (y) => y.command(proposeCommand).demandCommand(1, 'give a lexicons command: propose'),
    handler: () => undefined,
  };
}
