/**
 * The parts of HELM's MedHELM prompts that HELM builds in code rather than in a template, reproduced
 * so that ehrbench sends what HELM sends (and leaves out what HELM leaves out). The text is HELM's
 * (stanford-crfm/helm, Apache-2.0: n2c2_ct_matching_scenario.py, ehrshot_scenario.py,
 * medalign_scenario_helper.py); where ehrbench still differs, the benchmark's helm.differences says so.
 * Whitespace that only HELM's Python source indentation put into a string is written as one space.
 */
import { countCl100kTokens, fitsCl100k } from './tokens';

/** HELM's `max_length` for EHRSHOT and MedAlign in every MedHELM run entry. */
export const HELM_MAX_LENGTH = 100_000;

/** MedAlign's generation length, subtracted from the context before the EHR is packed. */
const MEDALIGN_GENERATION_LENGTH = 256;

/** The template MedAlign's helper counts (with its placeholders) to size the EHR. */
const MEDALIGN_TEMPLATE = 'Instruction: Answer the following question based on the EHR:\n\nEHR: {ehr}\n\nQuestion: {question}\n\nAnswer:';

/**
 * The n2c2 2018 criteria with the definitions HELM puts in the prompt (LONG_DEFINITIONS, its "custom
 * definitions for better prompts", not the task's original ones).
 */
export const N2C2_DEFINITIONS: Readonly<Record<string, string>> = {
  ABDOMINAL: 'History of intra-abdominal surgery. This could include any form of intra-abdominal surgery, including but not limited to small/large intestine resection or small bowel obstruction',
  'ADVANCED-CAD':
    'Advanced cardiovascular disease (CAD). For the purposes of this annotation, we define “advanced” as having 2 or more of the following: (a) Taking 2 or more medications to treat CAD (b) History of myocardial infarction (MI) (c) Currently experiencing angina (d) Ischemia, past or present. The patient must have at least 2 of these categories (a,b,c,d) to meet this criterion, otherwise the patient does not meet this criterion. For ADVANCED-CAD, be strict in your evaluation of the patient -- if they just have cardiovascular disease, then they do not meet this criterion.',
  'ALCOHOL-ABUSE': 'Current alcohol use over weekly recommended limits',
  'ASP-FOR-MI': 'Use of aspirin for preventing myocardial infarction (MI)..',
  CREATININE: 'Serum creatinine level above the upper normal limit',
  'DIETSUPP-2MOS':
    "Consumption of a dietary supplement (excluding vitamin D) in the past 2 months. To assess this criterion, go through the list of medications_and_supplements taken from the note. If a substance could potentially be used as a dietary supplement (i.e. it is commonly used as a dietary supplement, even if it is not explicitly stated as being used as a dietary supplement), then the patient meets this criterion. Be lenient and broad in what is considered a dietary supplement. For example, a 'multivitamin' and 'calcium carbonate' should always be considered a dietary supplement if they are included in this list.",
  'DRUG-ABUSE': 'Current or past history of drug abuse',
  ENGLISH:
    "Patient speaks English. Assume that the patient speaks English, unless otherwise explicitly noted. If the patient's language is not mentioned in the note, then assume they speak English and thus meet this criteria.",
  HBA1C: 'Any hemoglobin A1c (HbA1c) value between 6.5% and 9.5%',
  'KETO-1YR': 'Diagnosis of ketoacidosis within the past year',
  'MAJOR-DIABETES':
    'Major diabetes-related complication. Examples of “major complication” (as opposed to “minor complication”) include, but are not limited to, any of the following that are a result of (or strongly correlated with) uncontrolled diabetes: • Amputation • Kidney damage • Skin conditions • Retinopathy • nephropathy • neuropathy. Additionally, if multiple conditions together imply a severe case of diabetes, then count that as a major complication.',
  // HELM's definition ends with a stray quote, kept: the prompt wraps it in quotes of its own.
  'MAKES-DECISIONS':
    'Patient must make their own medical decisions. Assume that the patient makes their own medical decisions, unless otherwise explicitly noted. There is no information provided about the patient\'s ability to make their own medical decisions, then assume they do make their own decisions and therefore meet this criteria."',
  'MI-6MOS': 'Myocardial infarction (MI) within the past 6 months',
};

const RECORD_DATE = /Record date: (\d{4}-\d{2}-\d{2})/;

/**
 * A patient's n2c2 record text (the TEXT of the release's XML: notes separated by lines of 100
 * asterisks) as HELM lays it out: triple newlines made single, split into notes, each with a header
 * "## Note #i" and the date of its first "Record date:" line, joined by a line of 50 asterisks; and the
 * "current date", the date of the last note that has one ("None" when none has, as HELM prints it).
 */
export function n2c2Notes(recordText: string): { notes: string; count: number; currentDate: string } {
  const parts = recordText
    .split('\n\n\n')
    .join('\n')
    .split('*'.repeat(100))
    .map((p) => p.trim())
    .filter((p) => p !== '');
  const dates = parts.map((p) => RECORD_DATE.exec(p)?.[1]);
  const notes = parts.map((p, i) => `## Note #${i + 1}\nDate: ${dates[i] ?? ''}\n${p}`).join(`\n${'*'.repeat(50)}\n\n`);
  const current = dates.reduce<string | undefined>((last, d) => d ?? last, undefined);
  return { notes, count: parts.length, currentDate: current ?? 'None' };
}

/**
 * EHRSHOT's prompt as HELM sends it: HELM rewrites every "yes" as "A for yes" and then every "no" as
 * "B for no", inside words too ("now" becomes "B for now"). Reproduced, since that is what HELM's
 * models read.
 */
export function ehrshotHelmPrompt(prompt: string): string {
  return prompt.split('yes').join('A for yes').split('no').join('B for no');
}

/** Whether HELM keeps an EHRSHOT prompt: at most HELM_MAX_LENGTH tokens once reworded. */
export function ehrshotWithinLength(helmPrompt: string): boolean {
  return fitsCl100k(helmPrompt, HELM_MAX_LENGTH);
}

/**
 * Whether HELM keeps a MedAlign instruction. HELM sizes the EHR to the context (max_length less the
 * generation length, the template and the instruction) but then keeps only EHRs that already fit and
 * drops the others, so no EHR is ever truncated: the instance is left out instead.
 */
export function medalignEhrFits(instruction: string, ehr: string): boolean {
  const budget = HELM_MAX_LENGTH - MEDALIGN_GENERATION_LENGTH - countCl100kTokens(MEDALIGN_TEMPLATE) - countCl100kTokens(instruction);
  return budget > 0 && fitsCl100k(ehr, budget);
}

const CASED = /[\p{Lu}\p{Ll}\p{Lt}]/u;

/**
 * Python's str.title(): a cased letter after a cased letter is lower case, any other is upper case
 * (so "MATERIALS AND METHODS" becomes "Materials And Methods" and ", SCCVII" becomes ", Sccvii").
 * HELM title-cases PubMedQA's section labels this way.
 */
export function pythonTitle(s: string): string {
  let out = '';
  let previousCased = false;
  for (const ch of s) {
    const cased = CASED.test(ch);
    out += cased ? (previousCased ? ch.toLowerCase() : ch.toUpperCase()) : ch;
    previousCased = cased;
  }
  return out;
}

/** PubMedQA's labelled sections as HELM's PubMedQAScenario writes its passage: "Label. section", one a line. */
export function pubmedQaBackground(labels: readonly string[], contexts: readonly string[]): string {
  return contexts.map((c, i) => `${pythonTitle(labels[i] ?? '')}. ${c}`).join('\n');
}
