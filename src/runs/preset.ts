/**
 * Run presets: settings that belong together, in one word. `medhelm-leaderboard` is how MedHELM's
 * leaderboard ran a benchmark: at most 1,000 instances (`max_eval_instances`) drawn with HELM's seeded
 * sample, scored as HELM scores (`--scoring helm`), with HELM's max tokens and temperature per benchmark
 * (every definition carries HELM's already). A setting asked for beside a preset must agree with it: one
 * that contradicts it is refused naming both, so that a run recorded as the leaderboard's is one.
 * The model's own output budget (`--max-output-tokens`, HELM's `num_output_tokens`, which MedHELM set to
 * 4000 for reasoning models) and reasoning effort stay the model's, as in HELM's run entries.
 */
import { UserError } from '../errors';
import type { SampleMethod } from '../catalog';
import type { ScoringMode } from '../metrics';

export const RUN_PRESETS = ['medhelm-leaderboard'] as const;
export type RunPreset = (typeof RUN_PRESETS)[number];

/** MedHELM's leaderboard: `--max-eval-instances 1000` and HELM's seeded sample, HELM's scoring. */
export const MEDHELM_LEADERBOARD = { maxInstances: 1000, sample: 'helm', scoring: 'helm' } as const;

export interface PresetSettings {
  maxInstances?: number;
  sample?: SampleMethod;
  scoring?: ScoringMode;
}

/** How a setting is spelled on the command line, for the refusal (the API's field names follow in brackets). */
const FLAG: Record<keyof PresetSettings, string> = { maxInstances: '--max-instances (maxInstances)', sample: '--sample (sample)', scoring: '--scoring (scoring)' };

/**
 * The request's settings with the preset's applied. A setting the request gives that differs from the
 * preset's is refused (run.preset-conflict) naming the preset, the flag, its value and the preset's.
 */
export function applyPreset<T extends PresetSettings>(preset: unknown, req: T): T {
  if (preset === undefined) return req;
  if (!RUN_PRESETS.includes(preset as RunPreset)) {
    throw new UserError('run.invalid', `preset must be ${RUN_PRESETS.join(' or ')}, not ${String(preset).slice(0, 40)}`);
  }
  const settings = MEDHELM_LEADERBOARD;
  for (const key of Object.keys(settings) as (keyof PresetSettings)[]) {
    const asked = req[key];
    if (asked !== undefined && asked !== settings[key]) {
      throw new UserError(
        'run.preset-conflict',
        `--preset ${String(preset)} sets ${FLAG[key]} to ${settings[key]}, and the request asks for ${String(asked).slice(0, 40)}; leave ${FLAG[key].split(' ')[0]} out, or drop the preset`,
      );
    }
  }
  return { ...req, ...settings };
}
