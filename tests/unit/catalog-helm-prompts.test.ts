/**
 * Prompts as HELM sends them, and the instances HELM leaves out, for the benchmarks whose prompt
 * differed from HELM's in substance: NoteExtract, ADHD-MedEffects, MedAlign, EHRSHOT, N2C2-CT,
 * HeadQA, MedQA and MedMCQA. The HELM text quoted here is from HELM's scenarios and
 * medhelm_run_specs.py (stanford-crfm/helm, Apache-2.0); what still differs is listed in each
 * definition's helm.differences.
 */
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { Catalog, renderTemplate, streamInstances, type Benchmark, type Instance, type SkipCounts } from '../../src/catalog';
import { countCl100kTokens, fitsCl100k } from '../../src/catalog/tokens';
import { UserError } from '../../src/errors';
import { tempDir } from '../helpers/db';

const CHANGED = ['chw_care_plan', 'shc_sei_med', 'medalign', 'ehrshot', 'n2c2_ct_matching', 'head_qa', 'med_qa', 'med_mcqa'];

/** The benchmark bound to one site file holding `rows` (JSONL). */
function bound(id: string, rows: Record<string, unknown>[]): Benchmark {
  const dir = tempDir('helm-prompts');
  writeFileSync(join(dir, 'data.jsonl'), rows.map((r) => JSON.stringify(r)).join('\n') + '\n');
  const file = join(dir, 'site-data.json');
  writeFileSync(file, JSON.stringify({ jury: { judges: ['j1', 'j2', 'j3'] }, benchmarks: { [id]: { source: { type: 'jsonl', path: 'data.jsonl' } } } }));
  return Catalog.load([], { siteDataFile: file }).get(id);
}

async function read(b: Benchmark): Promise<{ instances: Instance[]; skipped: SkipCounts }> {
  const skipped: SkipCounts = {};
  const instances: Instance[] = [];
  for await (const i of streamInstances(b, { skipped })) instances.push(i);
  return { instances, skipped };
}

const prompt = (b: Benchmark, i: Instance | undefined) => renderTemplate(b.template, i as Instance, b.definition.id);

describe('HELM prompt text', () => {
  const catalog = Catalog.load();

  it('lists what still differs from HELM next to each changed benchmark', () => {
    for (const id of CHANGED) {
      const differences = catalog.get(id).definition.helm?.differences;
      expect(differences?.length).toBeGreaterThan(0);
      for (const d of differences ?? []) expect(d.length).toBeGreaterThan(20);
    }
  });

  it("NoteExtract: HELM's extraction instructions and response format (chw_care_plan_scenario.py)", () => {
    const t = catalog.get('chw_care_plan').template;
    expect(t).toContain('Follow the instructions provided regarding conversion of a patient note into a specified format.');
    expect(t).toContain('Your task is to extract specific information based solely on the content provided. Do not hallucinate or infer details that are not explicitly stated in the text.');
    expect(t).toContain('If the text does not contain specific information, clearly state "Not mentioned".');
    expect(t).toContain('Provoking/Palliating Factors: What makes the symptoms better or worse? [ENTER Provoking/Palliating Factors INFORMATION]');
    expect(t).toContain('Related Symptoms: Are there any other symptoms related to the main complaint? [ENTER RELATED SYMPTOMS INFORMATION]');
    // HELM's layout: the scenario's text after the bare ': ' of the empty input noun, the bare ':' of the empty output noun last.
    expect(t).toMatch(/\n\n: \nYou are provided with a clinical note/);
    expect(t).toMatch(/Clinical Note:\n\{\{note\}\}\n\n:$/);
    expect(t).not.toContain('Assessment and plan');
  });

  it('NoteExtract: leaves out (counted) a row whose note is empty, as HELM skips a NaN "MO Note"', async () => {
    const { instances, skipped } = await read(bound('chw_care_plan', [{ 'MO Note': 'Pt c/o knee pain x2 weeks, worse on stairs.' }, { 'MO Note': '' }]));
    expect(instances.map((i) => i.key)).toEqual(['1']);
    expect(skipped).toEqual({ 'dataset.skip.empty-column': 1 });
  });

  it("ADHD-MedEffects: HELM's definitions of side-effects inquiry (SEI) and NSEI (shc_sei_scenario.py)", async () => {
    const b = bound('shc_sei_med', [{ prompt: 'Is SEI documented?', context: 'Mother reports no appetite loss on methylphenidate.', label: 'A' }]);
    const { instances } = await read(b);
    const p = prompt(b, instances[0]);
    expect(p).toContain('Given the following definitions: side Effects Inquiry (SEI): Explicit documentation by the clinician asking about current side effects related to ADHD medications');
    expect(p).toContain('SEI does *not* include future side effects monitoring');
    expect(p).toContain('No Side Effects Inquiry (NSEI): No evidence of side effects monitoring.');
    expect(p).toContain(
      "Provide an answer to the following question: Is SEI documented? with the following context: Mother reports no appetite loss on methylphenidate. , Answer the question with a 'A' for yes or 'B' for no.",
    );
    expect(p).toMatch(/^Answer A or B\.\n/);
    expect(p).toContain('A. A\nB. B');
  });

  it('MedMCQA and MedQA: MedHELM\'s instruction, not HELM Lite\'s "The following are multiple choice questions"', () => {
    for (const id of ['med_qa', 'med_mcqa']) {
      const t = catalog.get(id).template;
      expect(t).toMatch(/^Give a letter answer among A, B, C or D\. Do not include any explanation or additional text\.\n/);
      expect(t).toContain("Respond only with 'A', 'B', 'C' or 'D'. Do not add any other text, punctuation, or symbols.");
      expect(t).not.toContain('The following are multiple choice questions');
    }
  });
});

describe('HeadQA: image questions are left out and counted, as HELM (SKIP_VQA)', () => {
  const row = (id: string, image: string | null) => ({ id, question: `Question ${id}?`, options: JSON.stringify(['one', 'two', 'three', 'four']), answer: 'B', image });

  it('keeps text questions, skips those with an image, and says how many', async () => {
    const b = bound('head_qa', [row('q1', null), row('q2', 'images/q2.png'), row('q3', ''), row('q4', 'images/q4.png')]);
    const { instances, skipped } = await read(b);
    expect(instances.map((i) => i.key)).toEqual(['q1', 'q3']);
    expect(skipped).toEqual({ 'dataset.skip.image-question': 2 });
    const p = prompt(b, instances[0]);
    expect(p).toContain(
      'You are a highly knowledgeable AI assistant specializing in biomedical sciences. Your task is to answer multiple-choice questions accurately based on the options provided. Each question will relate to biomedical concepts, and you will be asked to choose the most appropriate answer.\n\nSelect the correct answer by outputting only the letter corresponding to your choice (A, B, C, or D).',
    );
    expect(p).toContain('Question: Question q1?\nA. one\nB. two');
  });

  it('refuses a file without the image column: it cannot tell which questions HELM leaves out', async () => {
    const { image: _drop, ...noImage } = row('q1', null);
    const err = await read(bound('head_qa', [noImage])).catch((e: unknown) => e);
    expect(err).toBeInstanceOf(UserError);
    expect((err as UserError).message).toMatch(/record 1: missing column "image"$/);
  });
});

describe("EHRSHOT: HELM's prompt, its A/B rewording, and its 100,000-token filter", () => {
  const helmPrompt = (codes: string) =>
    "\n# Instructions\nYou are an expert hematologist at Stanford Healthcare, an academic medical center affiliated with Stanford University. You specialize in predicting anemia.\n\nInstruction: Review the patient's EHR history. Based on all available medical evidence in the provided EHR, please answer the question: If a lab test for Anemia is ordered for this patient right now, will it come back back abnormal? (i.e. <120 g/L)\n\n\n# Your Task\nPatient EHR:\n" +
    codes +
    '\n\n';

  it('rewords yes/no the way HELM does, leaves out prompts over 100,000 tokens (cl100k_base) and counts them', async () => {
    const long = Array.from({ length: 7000 }, (_, i) => `- SNOMED/${100000 + i} ICD10CM/E11.${i % 10}`).join('\n');
    const b = bound('ehrshot', [
      { id: 'p1-t1', prompt: helmPrompt('- LOINC/LP392452-1\n- SNOMED/59621000'), label: true },
      { id: 'p2-t1', prompt: helmPrompt(long), label: 'no' },
      { id: 'p3-t1', prompt: helmPrompt('- ICD10CM/D64.9'), label: 'no' },
    ]);
    const { instances, skipped } = await read(b);
    expect(instances.map((i) => [i.key, i.references[0]])).toEqual([
      ['p1-t1', 'yes'],
      ['p3-t1', 'no'],
    ]);
    expect(skipped).toEqual({ 'dataset.skip.prompt-over-max-length': 1 });
    const p = prompt(b, instances[0]);
    // HELM replaces every "yes" and "no" in the prompt, inside words too ("right now" -> "right B for now").
    expect(p).toContain('is ordered for this patient right B for now, will it come back back abB for normal?');
    expect(p).toMatch(/^Answer A for yes, B for no\.\n/);
    expect(p).toMatch(/\nA\. yes\nB\. no\nRespond with only 'A' for yes or 'B' for no\. Do not add any other text, punctuation, or symbols:$/);
  });

  it('refuses a label that is neither yes/no nor a boolean', async () => {
    const err = await read(bound('ehrshot', [{ id: 'p1', prompt: helmPrompt('- X'), label: 'maybe' }])).catch((e: unknown) => e);
    expect((err as UserError).message).toMatch(/record 1: column "label" must be yes, no, true or false$/);
  });
});

describe("MedAlign: HELM's order (EHR, then the question) and its token budget", () => {
  it('puts the EHR before the instruction as HELM does, and leaves out (counted) an EHR over the 100,000-token budget', async () => {
    const huge = '<encounter start="01/02/20 10:00">' + ' lab value 12.5 mg/dL;'.repeat(25000) + '</encounter>';
    const b = bound('medalign', [
      { instruction_id: '11', instruction: 'Summarise the last admission.', ehr: '<record><encounter>admitted for pneumonia</encounter></record>', clinician_response: 'Pneumonia, treated.' },
      { instruction_id: '12', instruction: 'List the labs.', ehr: huge, clinician_response: 'Many.' },
    ]);
    const { instances, skipped } = await read(b);
    expect(instances.map((i) => i.key)).toEqual(['11']);
    expect(skipped).toEqual({ 'dataset.skip.ehr-over-token-budget': 1 });
    expect(prompt(b, instances[0])).toBe(
      '\nQuestion: Instruction: Answer the following question based on the EHR:\n\nEHR: <record><encounter>admitted for pneumonia</encounter></record>\n\nQuestion: Summarise the last admission.\n\nAnswer:\n',
    );
  });
});

describe('N2C2-CT: HELM\'s criterion definitions, dated notes and the "current date" line', () => {
  const stars = '*'.repeat(100);
  const notes = `\n\n\nRecord date: 2090-03-01\nSeen for abdominal pain after a colectomy.\n\n\n\n${stars}\n\nRecord date: 2091-05-02\nFollow-up; creatinine 1.1.\n${stars}\n`;

  it('builds the prompt of N2C2CTMatchingScenario from the n2c2 record text', async () => {
    const b = bound('n2c2_ct_matching', [
      { id: '101-ABDOMINAL', notes, criterion: 'ABDOMINAL', label: 'met' },
      { id: '101-CREATININE', notes, criterion: 'CREATININE', label: 'not met' },
    ]);
    const { instances } = await read(b);
    expect(instances.map((i) => i.references)).toEqual([['yes'], ['no']]);
    const p = prompt(b, instances[0]);
    expect(p).toContain('The inclusion criterion being assessed is: "ABDOMINAL".');
    expect(p).toContain(
      'The definition of the inclusion criterion is: "History of intra-abdominal surgery. This could include any form of intra-abdominal surgery, including but not limited to small/large intestine resection or small bowel obstruction".',
    );
    expect(p).toContain("Below is a set of 2 clinical notes describing the patient's current health status.");
    expect(p).toContain(
      `## Note #1\nDate: 2090-03-01\nRecord date: 2090-03-01\nSeen for abdominal pain after a colectomy.\n${'*'.repeat(50)}\n\n## Note #2\nDate: 2091-05-02\nRecord date: 2091-05-02\nFollow-up; creatinine 1.1.`,
    );
    // HELM's f-string indents every line of its own text by four spaces, and ends with an indented empty line.
    expect(p).toContain('    # Current Date\n    Assume that the current date is: 2091-05-02\n');
    expect(p).toMatch(/ {4}Does the patient meet the inclusion criterion "ABDOMINAL"\?\n {4}\nA\. yes\nB\. no\nAnswer A for yes, B for no\. Do not add any other text, punctuation, or symbols:$/);
  });

  it('writes "None" for the current date when no note has a record date, as HELM does', async () => {
    const b = bound('n2c2_ct_matching', [{ id: '7', notes: 'A note without a date.', criterion: 'ENGLISH', label: 'met' }]);
    const { instances } = await read(b);
    const p = prompt(b, instances[0]);
    expect(p).toContain('## Note #1\nDate: \nA note without a date.');
    expect(p).toContain('Assume that the current date is: None\n');
  });

  it('refuses a criterion n2c2 2018 does not define, and a label other than met / not met', async () => {
    const bad = await read(bound('n2c2_ct_matching', [{ id: '7', notes: 'x', criterion: 'SMOKER', label: 'met' }])).catch((e: unknown) => e);
    expect((bad as UserError).message).toMatch(/record 1: column "criterion" must be one of the 13 n2c2 2018 criteria \(ABDOMINAL, ADVANCED-CAD, .*\)$/);
    const label = await read(bound('n2c2_ct_matching', [{ id: '7', notes: 'x', criterion: 'ENGLISH', label: 'yes' }])).catch((e: unknown) => e);
    expect((label as UserError).message).toMatch(/record 1: column "label" must be met or not met$/);
  });
});

describe("token counts: tiktoken's cl100k_base, as HELM's filters use it", () => {
  it("encodes as Python's tiktoken does (OpenAI's own example) and decides the limit exactly, long texts counted", () => {
    // tiktoken.get_encoding("cl100k_base").encode("tiktoken is great!") == [83, 1609, 5963, 374, 2294, 0]
    expect(countCl100kTokens('tiktoken is great!')).toBe(6);
    const text = 'tiktoken is great! '.repeat(1000);
    const n = countCl100kTokens(text);
    expect(Buffer.byteLength(text)).toBeGreaterThan(n);
    expect([fitsCl100k(text, n), fitsCl100k(text, n - 1)]).toEqual([true, false]);
  });
});
