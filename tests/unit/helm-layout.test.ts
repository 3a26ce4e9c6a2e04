/**
 * Prompts laid out as HELM lays them (issue 30): every shipped PubMedQA, MedCalc-Bench, MEDEC, EHRSQL and ACI-Bench
 * instance, every record of the MedHELM package fixtures, and every other benchmark's template, is
 * rendered by ehrbench and compared with HELM's prompt rebuilt here, independently of ehrbench's
 * templates and adapters, from the raw dataset files and the fields of HELM's run spec
 * (medhelm_run_specs.py at stanford-crfm/helm 63754d05, Apache-2.0): the instructions, the input and
 * output nouns, and the AdapterSpec defaults the run spec leaves as they are. The instruction text below
 * is HELM's, quoted.
 *
 * HELM's in-context-learning adapter with no training examples sends
 *   instructions + "\n" (format_instructions) + "\n" (instance_prefix; no instructions, no block)
 *   + input_prefix + input text + input_suffix
 *   [+ each option as "A. text\n" for multiple_choice_joint]
 *   + output_prefix with its trailing whitespace removed.
 */
import { readFileSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { parse } from 'csv-parse/sync';
import { Catalog, renderTemplate, streamInstances, templateVariables, type Benchmark, type Instance } from '../../src/catalog';
import { tempDir } from '../helpers/db';
import { ROOT } from '../helpers/paths';

interface HelmAdapter {
  instructions: string;
  inputPrefix: string;
  inputSuffix: string;
  outputPrefix: string;
}

/** get_multiple_choice_joint_adapter_spec: "{noun}: " prefixes; the input suffix "\n" when there is an input noun. */
function multipleChoiceJoint(instructions: string, inputNoun: string | null, outputNoun: string): HelmAdapter {
  return { instructions: `${instructions}\n`, inputPrefix: inputNoun === null ? '' : `${inputNoun}: `, inputSuffix: inputNoun === null ? '' : '\n', outputPrefix: `${outputNoun}: ` };
}

/**
 * get_generation_adapter_spec, newline_after_*_noun false: "{noun}: " or nothing; the input suffix is always "\n".
 * format_instructions adds its "\n" only to instructions that are not empty (SCT-Bench's are).
 */
function generation(instructions: string, inputNoun: string | null, outputNoun: string | null): HelmAdapter {
  const prefix = (noun: string | null) => (noun === null ? '' : `${noun}: `);
  return { instructions: instructions === '' ? '' : `${instructions}\n`, inputPrefix: prefix(inputNoun), inputSuffix: '\n', outputPrefix: prefix(outputNoun) };
}

/** get_generation_adapter_spec with newline_after_input_noun and newline_after_output_noun: "{noun}:\\n". */
function generationNewlines(instructions: string, inputNoun: string, outputNoun: string): HelmAdapter {
  return { instructions: `${instructions}\n`, inputPrefix: `${inputNoun}:\n`, inputSuffix: '\n', outputPrefix: `${outputNoun}:\n` };
}

function helmPrompt(a: HelmAdapter, input: string, options: string[] = []): string {
  const lettered = options.map((o, i) => `${String.fromCharCode(65 + i)}. ${o}\n`).join('');
  // Prompt.text joins the non-empty blocks with the instance prefix: empty instructions are no block.
  const blocks = [a.instructions, `${a.inputPrefix}${input}${a.inputSuffix}${lettered}${a.outputPrefix.trimEnd()}`].filter((block) => block !== '');
  return blocks.join('\n');
}

/** HELM's PassageQuestionInput: passage_prefix + passage + separator + "Question: " + question. */
function passageQuestion(passage: string, question: string, passagePrefix: string, separator: string): string {
  return `${passagePrefix}${passage}${separator}Question: ${question}`;
}

/** Python's str.title() on the labels PubMedQA has (ASCII): each run of letters capitalised. */
function titled(label: string): string {
  return label.replace(/[A-Za-z]+/g, (w) => w[0]!.toUpperCase() + w.slice(1).toLowerCase());
}

/** EhrSqlScenario.extract_schema: each CREATE TABLE statement up to its ";", lines stripped, statements a blank line apart. */
function createTableStatements(sql: string): string {
  const statements: string[] = [];
  let current: string[] | undefined;
  for (const raw of sql.split('\n')) {
    const line = raw.trim();
    if (line.startsWith('CREATE TABLE')) current = [line];
    else if (current) {
      current.push(line);
      if (line.endsWith(';')) {
        statements.push(current.join('\n'));
        current = undefined;
      }
    }
  }
  return statements.join('\n\n');
}

const MEDEC_INSTRUCTIONS =
  'The following is a medical narrative about a patient. You are a skilled medical doctor reviewing the clinical text. The text is either correct or contains one error. The text has a sentence per line. Each line starts with the sentence ID, followed by a space character then the sentence to check. Check every sentence of the text. If the text is correct return the following output: CORRECT. If the text has a medical error, return the sentence ID of the sentence containing the error, followed by a space, and a corrected version of the sentence.';

const EHRSQL_INSTRUCTIONS =
  "You are a highly skilled AI specializing in medical SQL queries. Given a database schema and a medical question, generate a valid SQL query that retrieves the required information from the database. Output only the SQL query without explanations.\n\nInput: A database schema followed by a natural language question.\nOutput: A valid SQL query ending with ;. Only return SQL query, don't add additional text.\n\nIf the question is unanswerable, return an empty string without additional text or comments.";

async function rendered(b: Benchmark): Promise<Map<string, string>> {
  const out = new Map<string, string>();
  for await (const i of streamInstances(b)) out.set(i.key, renderTemplate(b.template, i, b.definition.id));
  return out;
}

/** How many of HELM's prompts ehrbench sends exactly; the first that differs is shown by its key only. */
function compare(ours: Map<string, string>, helm: Map<string, string>): { matches: number; firstMismatch?: string } {
  let matches = 0;
  let firstMismatch: string | undefined;
  for (const [key, prompt] of helm) {
    if (ours.get(key) === prompt) matches++;
    else firstMismatch ??= key;
  }
  return { matches, ...(firstMismatch !== undefined ? { firstMismatch } : {}) };
}

describe("prompts laid out as HELM's adapter lays them", () => {
  const catalog = Catalog.load();

  it('PubMedQA: all 1,000 shipped instances as HELM sends them (PubMedQAScenario, multiple_choice_joint)', async () => {
    const adapter = multipleChoiceJoint('Answer A for yes, B for no or C for maybe. Do not include any explanation or additional text. Output only the letter on a single line.', 'Question', 'Answer');
    const raw = JSON.parse(readFileSync(join(ROOT, 'datasets/pubmed_qa/ori_pqal.json'), 'utf8')) as Record<string, { QUESTION: string; CONTEXTS: string[]; LABELS: string[] }>;
    const helm = new Map<string, string>();
    for (const [pmid, r] of Object.entries(raw)) {
      const background = r.CONTEXTS.map((c, i) => `${titled(r.LABELS[i]!)}. ${c}`).join('\n');
      helm.set(pmid, helmPrompt(adapter, passageQuestion(background, `${r.QUESTION}\n`, 'Context: ', '\n\n'), ['yes', 'no', 'maybe']));
    }
    const ours = await rendered(catalog.get('pubmed_qa'));
    expect(helm.size).toBe(1000);
    expect(ours.size).toBe(1000);
    expect(compare(ours, helm)).toEqual({ matches: 1000 });
  });

  it('MedCalc-Bench: all 1,047 shipped instances as HELM sends them (MedCalcBenchScenario, generation)', async () => {
    const adapter = generation('Given a patient note and a clinical question, compute the requested medical value.', null, 'Answer only the requested quantity without units. No explanation needed');
    const rows = parse(readFileSync(join(ROOT, 'datasets/medcalc_bench/test_data.csv')), { columns: true }) as Record<string, string>[];
    const helm = new Map<string, string>();
    for (const r of rows) {
      helm.set(r['Row Number']!, helmPrompt(adapter, passageQuestion(`${r['Patient Note']}\n`, `${r['Question']}\n`, 'Patient note: ', '\n')));
    }
    const ours = await rendered(catalog.get('medcalc_bench'));
    expect(helm.size).toBe(1047);
    expect(ours.size).toBe(1047);
    expect(compare(ours, helm)).toEqual({ matches: 1047 });
  });

  it('MEDEC: all shipped instances as HELM sends them (MedecScenario, generation)', async () => {
    const adapter = generation(MEDEC_INSTRUCTIONS, 'Clinical Note', 'Answer');
    const rows = parse(readFileSync(join(ROOT, 'datasets/medec/MEDEC-MS-TestSet-with-GroundTruth-and-ErrorType.csv')), { columns: true }) as Record<string, string>[];
    const helm = new Map<string, string>();
    for (const r of rows) if (r['Sentences']) helm.set(r['Text ID']!, helmPrompt(adapter, r['Sentences'].trim()));
    const ours = await rendered(catalog.get('medec'));
    expect(ours.size).toBe(helm.size);
    expect(compare(ours, helm)).toEqual({ matches: helm.size });
  });

  it("EHRSQL: all 2,909 shipped questions as HELM sends them (EhrSqlScenario's schema and layout, generation)", async () => {
    const adapter = generation(EHRSQL_INSTRUCTIONS, 'Medical Question + Schema', 'SQL Query');
    const schema = createTableStatements(readFileSync(join(ROOT, 'datasets/ehr_sql/eicu_eicu.sql'), 'utf8'));
    const helm = new Map<string, string>();
    for (const file of ['eicu_valid.json', 'eicu_test.json']) {
      for (const q of JSON.parse(readFileSync(join(ROOT, 'datasets/ehr_sql', file), 'utf8')) as { id: string; question: string }[]) {
        // HELM's f-string continues its line with a backslash, so the next line's indentation (20 spaces) is in the text.
        helm.set(q.id, helmPrompt(adapter, `-- Database Schema:\n${schema}\n\n--${' '.repeat(21)}Question:\n${q.question}\n\n`));
      }
    }
    const ours = await rendered(catalog.get('ehr_sql'));
    expect(helm.size).toBe(2909);
    expect(compare(ours, helm)).toEqual({ matches: 2909 });
  });

  it('ACI-Bench: all 120 shipped dialogues as HELM sends them (ACIBenchScenario, generation)', async () => {
    const adapter = SITE.aci_bench!.adapter;
    const helm = new Map<string, string>();
    for (const file of ['clinicalnlp_taskB_test1_full.json', 'clef_taskC_test3_full.json', 'clinicalnlp_taskC_test2_full.json']) {
      const { data } = JSON.parse(readFileSync(join(ROOT, 'datasets/aci_bench', file), 'utf8')) as { data: { file: string; src: string }[] };
      for (const d of data) helm.set(d.file, helmPrompt(adapter, `Doctor-patient dialogue:\n\n${d.src}`));
    }
    const ours = await rendered(catalog.get('aci_bench'));
    expect(helm.size).toBe(120);
    expect(compare(ours, helm)).toEqual({ matches: 120 });
  });

  it("MedHallu: HELM's instructions whole and its layout (MedHalluScenario, generation)", async () => {
    const b = catalog.get('medhallu');
    const t = b.template;
    // The four hallucination types are HELM's, not a condensed list.
    expect(t).toContain('Type: Misinterpretation of #Question#: These are hallucinated answers that misunderstands the question, leading to an off-topic or irrelevant response.');
    expect(t).toContain(
      'Type: Methodological and Evidence Fabrication - Inventing false research methods, statistical data, or specific clinical outcomes\n\nDo not return anything else, just the answer.',
    );
    const instance = { key: '1', vars: { knowledge: 'K', question: 'Q?', answer: 'A.' }, references: ['0'] };
    const prompt = renderTemplate(t, instance, 'medhallu');
    expect(prompt).toMatch(
      /No letter or word, just the integer value\.\n\nWorld Knowledge: K\n\nQuestion: Q\?\n\nAnswer: A\.\n\nReturn just an integer value, '0' if the answer is factual and '1' if the answer is hallucinated\.\nNo letter or word, just the integer value\.\n\nYour Judgment:$/,
    );
  });
});

/**
 * The other benchmarks (site data): each template, filled with its own placeholders, against HELM's layout
 * rebuilt from the run spec's fields and the text its scenario puts around the data. `scenario` is that
 * text; where it is long and checked word for word in catalog-helm-prompts.test.ts, only what comes
 * before and after it (HELM's frame) is compared here.
 */
interface SiteLayout {
  adapter: HelmAdapter;
  /** The scenario's input text, from the instance's variables (placeholders here). */
  scenario?: (v: Record<string, string>) => string;
  /** Options written out in the template rather than from the instance (CLEAR's name the condition). */
  options?: (v: Record<string, string>) => string[];
}

const SHC_AB = (q: string) => (v: Record<string, string>) =>
  `${q}Provide an answer to the following question: ${v.question} with the following context: ${v.context} , Answer the question with a 'A' for yes or 'B' for no. Do not provide any additional details or response, just a simple A or B response.`;
const SHC_YES_NO = "Respond with only 'A' for yes or 'B' for no. Do not add any other text, punctuation, or symbols";
const condition = (v: Record<string, string>) => v.condition;

const SITE: Record<string, SiteLayout> = {
  aci_bench: {
    adapter: generation(
      'Summarize the conversation to generate a clinical note with four sections:\n1. HISTORY OF PRESENT ILLNESS\n2. PHYSICAL EXAM\n3. RESULTS\n4. ASSESSMENT AND PLAN\n\nThe conversation is:',
      'Conversation',
      'Clinical Note',
    ),
    scenario: (v) => `Doctor-patient dialogue:\n\n${v.conversation}`,
  },
  chw_care_plan: { adapter: generation('Follow the instructions provided regarding conversion of a patient note into a specified format.', '', '') },
  clear: {
    adapter: multipleChoiceJoint(
      "Answer 'A' for 'Has a history of {c}', 'B' for 'Does not have a history of {c}', or 'C' for 'Uncertain'",
      null,
      "Respond only with 'A', 'B', or 'C'. Do not add any other text, punctuation, or symbols",
    ),
    scenario: (v) =>
      `You are a medical assistant reviewing patient notes. Determine whether the patient has a history of ${condition(v)}.\n\nOriginal Clinical Note:\n${v.text}\n\nA. Has a history of ${condition(v)}\nB. Does not have a history of ${condition(v)}\nC. Uncertain\n\nAnswer:`,
    options: (v) => [`Has a history of ${condition(v)}`, `Does not have a history of ${condition(v)}`, 'Uncertain'],
  },
  dischargeme: {
    adapter: generation(
      'Given a discharge text, a radiology report text, and a target document of either discharge instructions or a brief hospital course, return the generated target document from the context provided.',
      null,
      'Answer',
    ),
    // A backslash continues HELM's line, so the next line's four spaces of indentation are in the text.
    scenario: (v) =>
      `Generate the ${v.target_name} from the following patient discharge text and radiology report text.    \n\nDischarge Text:\n${v.discharge_text}\n\nRadiology Report:\n${v.radiology_report}\n\n${v.target_name}:\n`,
  },
  ehrshot: { adapter: multipleChoiceJoint('Answer A for yes, B for no.', '', SHC_YES_NO), scenario: (v) => v.prompt! },
  head_qa: {
    adapter: multipleChoiceJoint(
      'You are a highly knowledgeable AI assistant specializing in biomedical sciences. Your task is to answer multiple-choice questions accurately based on the options provided. Each question will relate to biomedical concepts, and you will be asked to choose the most appropriate answer.\n\nSelect the correct answer by outputting only the letter corresponding to your choice (A, B, C, or D).',
      'Question',
      'Answer',
    ),
    scenario: (v) => v.question!,
  },
  med_dialog: { adapter: generation('Generate a one sentence summary of this patient-doctor conversation.', 'Patient-Doctor', 'Summary'), scenario: (v) => v.dialogue! },
  med_mcqa: {
    adapter: multipleChoiceJoint(
      'Give a letter answer among A, B, C or D. Do not include any explanation or additional text.',
      'Question',
      "Respond only with 'A', 'B', 'C' or 'D'. Do not add any other text, punctuation, or symbols.",
    ),
    scenario: (v) => v.question!,
  },
  med_qa: {
    adapter: multipleChoiceJoint(
      'Give a letter answer among A, B, C or D. Do not include any explanation or additional text.',
      'Question',
      "Respond only with 'A', 'B', 'C' or 'D'. Do not add any other text, punctuation, or symbols.",
    ),
    scenario: (v) => v.question!,
  },
  // No instructions: HELM's prompt is the PassageQuestionInput ("" + "\n" + "Question: " + packed prompt) and its suffix.
  medalign: {
    adapter: { instructions: '', inputPrefix: '', inputSuffix: '\n', outputPrefix: '' },
    scenario: (v) => `\nQuestion: Instruction: Answer the following question based on the EHR:\n\nEHR: ${v.ehr}\n\nQuestion: ${v.instruction}\n\nAnswer:`,
  },
  medbullets: {
    adapter: multipleChoiceJoint(
      'You are a highly knowledgeable AI assistant specializing in medicine. Your task is to answer medical questions similar to those found on the USMLE Step 2/3 exams. You will be provided with a clinical scenario followed by several multiple-choice options.\n\nSelect the correct answer by outputting only the letter corresponding to your choice (A, B, C, D, or E).',
      'Clinical Scenario',
      'Answer',
    ),
    scenario: (v) => v.question!,
  },
  medi_qa: { adapter: generation('Answer the following consumer health question.', 'Question', 'Answer'), scenario: (v) => v.question! },
  medication_qa: { adapter: generation('Please answer the following consumer health question.', 'Question', 'Answer'), scenario: (v) => v.question! },
  mental_health: {
    adapter: generation('Given a mental health conversation history, generate an empathetic and appropriate counselor response.', null, 'Counselor response'),
    scenario: (v) => `\nQuestion: Topic: ${v.topic}\nType: ${v.dialogue_type}\n\nPrevious conversation:\n${v.context}\n\nGenerate an empathetic and appropriate counselor response:`,
  },
  mimic_bhc: { adapter: generationNewlines('Summarize the clinical note into a brief hospital course.', 'Clinical Note', 'Brief Hospital Course'), scenario: (v) => v.input! },
  mimic_rrs: {
    adapter: generationNewlines(
      'Generate the impression section of the radiology report based on its findings. This will not be used to diagnose nor treat any patients. Be as concise as possible.',
      'Findings',
      'Impression',
    ),
    scenario: (v) => v.findings!,
  },
  mimiciv_billing_code: { adapter: generationNewlines('Given the following clinical note, identify all relevant ICD-10 codes.', 'Note', 'Predicted ICD-10 Codes'), scenario: (v) => v.text! },
  mtsamples_procedures: { adapter: generation('Here are information about a patient, return a reasonable treatment plan for the patient.', 'Patient Notes', 'Answer'), scenario: (v) => v.notes! },
  mtsamples_replicate: { adapter: generation('Given various information about a patient, return a reasonable treatment plan for the patient.', null, 'Answer'), scenario: (v) => v.report! },
  n2c2_ct_matching: { adapter: multipleChoiceJoint('Answer A for yes, B for no.', '', 'Answer A for yes, B for no. Do not add any other text, punctuation, or symbols') },
  race_based_med: {
    adapter: multipleChoiceJoint('Answer A for yes, B for no.', null, SHC_YES_NO),
    scenario: (v) =>
      `For the following question-answer pair, respond 'A' for yes if ${' '.repeat(20)}the answer involves harmful, innacurate,and/or race-based content and respond 'B' for no otherwise.\n\n ${' '.repeat(20)}Question: ${v.question}\nResponse: ${v.response}\n`,
  },
  shc_bmt_med: { adapter: multipleChoiceJoint('Answer A or B.', '', ''), scenario: SHC_AB('') },
  shc_conf_med: { adapter: multipleChoiceJoint('Answer A or B.', '', ''), scenario: SHC_AB('') },
  shc_gip_med: { adapter: multipleChoiceJoint('Answer A or B.', '', ''), scenario: SHC_AB('') },
  shc_ptbm_med: {
    adapter: multipleChoiceJoint('Answer A or B.', '', ''),
    scenario: SHC_AB('You are reviewing a clinical note from health records of children with attention deficit hyperactivity disorder (ADHD) and classifying mentions of behavioral therapy. '),
  },
  shc_cdi_med: {
    adapter: multipleChoiceJoint('Answer A or B.', '', ''),
    scenario: (v) =>
      `Provide an answer to the following question: ${v.question} with the following context: ${v.context} , Answer the question with either 'A' for yes or 'B' for no. Do not provide any additional details or response, just a simple A or B response.`,
  },
  shc_privacy_med: {
    adapter: multipleChoiceJoint('Answer A or B.', '', ''),
    scenario: (v) =>
      `You are reviewing clinical messages in order to determine if any confidential information was included. Please answer the following question: ${v.question} with the following context: ${v.context} , Answer the question with a 'A' for yes or 'B' for no. Do not provide any additional details or response, just a simple A or B response.`,
  },
  shc_proxy_med: {
    adapter: multipleChoiceJoint('Answer A, B, or C.', '', ''),
    scenario: (v) =>
      `You are reviewing a clinical messages in order to determine if they have been sent by a proxy user. Please determine the following: ${v.question} with the following context: ${v.context} , Answer the question with a 'A' for yes or 'B' for no. Do not provide any additional details or response, just a simple A or B response.`,
  },
  shc_sei_med: { adapter: multipleChoiceJoint('Answer A or B.', '', '') },
  // HELM's running number before the prompt is left out (listed in helm.differences).
  shc_ent_med: {
    adapter: multipleChoiceJoint('Answer A, B, or C.', '', ''),
    scenario: (v) =>
      `Provide an answer to the following question: ${v.question} with the following context: ${v.context} , Answer the question with either 'A' for yes, 'B' for no, or 'C' for no mention. Do not provide any additional details or response, just a simple A, B, or C response.`,
  },
  shc_sequoia_med: { adapter: multipleChoiceJoint('Answer A or B.', '', ''), scenario: SHC_AB('') },
  starr_patient_instructions: {
    adapter: generation(
      "You are a medical professional tasked with generating personalized post-procedure patient instructions. Given the following case details which include the patient's diagnosis, the planned procedure, the history & physical note, and the operative report, generate clear and actionable instructions for the patient to follow after their procedure. Don't worry, this information will not be used for any clinical decision making. This will not be used to diagnose nor treat any patients.",
      'Case Details',
      'Patient Instructions',
    ),
    scenario: (v) => `Diagnosis: ${v.diagnosis}\nProcedure: ${v.procedure}\nHistory & Physical: ${v.hp_note}\nOperative Report: ${v.op_note}\n\n`,
  },
};

/** Benchmarks whose differences list says why the layout is not HELM's (both lists must move together). */
const LAYOUT_DIFFERS = new Set(['shc_ent_med', 'shc_sequoia_med']);

describe("every benchmark's template in HELM's layout", () => {
  const catalog = Catalog.load();
  const shippedAndChecked = new Set(['pubmed_qa', 'medcalc_bench', 'medec', 'ehr_sql', 'medhallu']);
  // Checked record by record on fixtures below, against the package's run specs.
  const packageChecked = new Set(['sct_bench', 'medxpert_qa_text', 'health_bench', 'health_bench_professional']);

  it('covers every benchmark of the catalog that has a HELM run spec', () => {
    const ids = catalog
      .list()
      .filter((b) => b.definition.helm?.runSpec)
      .map((b) => b.definition.id);
    expect(ids.filter((id) => !SITE[id] && !shippedAndChecked.has(id) && !packageChecked.has(id))).toEqual([]);
  });

  it.each(Object.keys(SITE))('%s', (id) => {
    const b = catalog.get(id);
    const layout = SITE[id]!;
    const vars = Object.fromEntries(templateVariables(b.template).map((v) => [v, `<${v}>`]));
    const choices = ['first option', 'second option', 'third option'];
    const ours = renderTemplate(b.template, { key: '1', vars, choices, references: [] }, id);
    const a = { ...layout.adapter, instructions: layout.adapter.instructions.split('{c}').join(vars.condition ?? '') };
    const options = layout.options?.(vars) ?? (templateVariables(b.template).includes('choices') ? choices : []);
    if (layout.scenario) {
      expect(ours).toBe(helmPrompt(a, layout.scenario(vars), options));
    } else {
      // HELM's frame around the scenario's text, which catalog-helm-prompts.test.ts checks.
      const [head, tail] = helmPrompt(a, '\u0000', options).split('\u0000');
      expect(ours.startsWith(head!)).toBe(true);
      expect(ours.endsWith(tail!)).toBe(true);
    }
    const listed = (b.definition.helm?.differences ?? []).some((d) => d.startsWith('Prompt: HELM puts a running number'));
    expect(listed).toBe(LAYOUT_DIFFERS.has(id));
  });
});

/**
 * The MedHELM package's benchmarks (github.com/PacificAI/medhelm 1becdd64, PyPI medhelm 0.6.0,
 * Apache-2.0): its medhelm_run_specs.py is HELM's plus sct_bench, medxpert_qa_text, health_bench and
 * health_bench_professional, whose adapter fields are rebuilt here as HELM's are above, over the
 * synthetic records in tests/fixtures (medhelm-package, health-bench).
 */
const PACKAGE = join(ROOT, 'tests', 'fixtures', 'medhelm-package');

/** The instances a benchmark reads from `file`, bound as a site binds it. */
async function boundInstances(id: string, file: string, binding: Record<string, unknown> = {}): Promise<Instance[]> {
  const siteFile = join(tempDir('layout'), 'site-data.json');
  writeFileSync(siteFile, JSON.stringify({ benchmarks: { [id]: { source: { type: file.endsWith('.csv') ? 'csv' : 'jsonl', path: file }, ...binding } } }));
  const out: Instance[] = [];
  for await (const i of streamInstances(Catalog.load([], { siteDataFile: siteFile }).get(id))) out.push(i);
  return out;
}

const prompts = (b: Benchmark, instances: Instance[]) => new Map(instances.map((i) => [i.key, renderTemplate(b.template, i, b.definition.id)]));

/**
 * SCTBenchScenario's GUIDELINE_TEMPLATE and TESTCASE_TEMPLATE, SCT-Bench's (MIT, benchmarks/sct_bench/NOTICE.md),
 * quoted so the test does not read them from the template it checks.
 */
const SCT_GUIDELINE =
  '# Script Concordance Testing\n\nYou are taking a Script Concordance Test, which evaluates your understanding of medical knowledge.\n\nIn this test, you will evaluate how new information impacts a specific hypothesis. Use the following scale to rate the impact:\n\n-2: Strongly decreases the likelihood of the hypothesis\n-1: Slightly decreases the likelihood of the hypothesis\n0: No effect on the likelihood of the hypothesis\n+1: Slightly increases the likelihood of the hypothesis\n+2: Strongly increases the likelihood of the hypothesis\n\n## Response format\n\nRespond with "Rating: " followed by a rating (-2, -1, 0, +1, +2) and a brief explanation for your choice.\n\nThis is an exam, and you are required to provide a valid answer.\n';
const SCT_TESTCASE = '## Scenario\n\n{{ scenario }}\n\n## Hypothesis\n\n{{ hypothesis }}\n\n## Additional Information\n\n{{ additional information }}\n\n## Response';

/** HealthBench's synthetic conversations, one JSON object a line. */
const healthBenchRows = () =>
  readFileSync(join(ROOT, 'tests/fixtures/health-bench/synthetic.jsonl'), 'utf8')
    .split('\n')
    .filter((l) => l.trim() !== '')
    .map((l) => JSON.parse(l) as { prompt_id: string; prompt: unknown[]; rubrics: unknown[]; example_tags: string[] });

describe("the MedHELM package's benchmarks laid out as its run specs lay them", () => {
  const catalog = Catalog.load();

  it('SCT-Bench: every record as the package sends it (SCTBenchScenario, reason and few_shot off; generation, no instructions or nouns)', async () => {
    const adapter = generation('', null, null);
    const template = SCT_GUIDELINE.replace(' and a brief explanation for your choice', '') + SCT_TESTCASE;
    const rows = parse(readFileSync(join(PACKAGE, 'sct_bench.csv')), { columns: true }) as Record<string, string>[];
    const helm = new Map<string, string>();
    for (const r of rows) {
      if (!r['sct_stem'] || !r['question'] || !r['additional_info']) continue;
      const input = template.replace('{{ scenario }}', r['sct_stem']).replace('{{ hypothesis }}', r['question']).replace('{{ additional information }}', r['additional_info']);
      helm.set(r['question_id']!, helmPrompt(adapter, input));
    }
    const b = catalog.get('sct_bench');
    const ours = prompts(b, await boundInstances('sct_bench', join(PACKAGE, 'sct_bench.csv')));
    expect(helm.size).toBe(4);
    expect(ours.size).toBe(helm.size);
    expect(compare(ours, helm)).toEqual({ matches: helm.size });
  });

  it("MedXpertQA: every record as the package sends it (MedXpertQATextScenario, multiple_choice_joint with the dataset's options)", async () => {
    const adapter = multipleChoiceJoint('You are a medical expert assistant. Answer the following medical question with single letter from options.', 'Question', 'Answer');
    const helm = new Map<string, string>();
    for (const line of readFileSync(join(PACKAGE, 'medxpert_qa_text.jsonl'), 'utf8')
      .split('\n')
      .filter((l) => l.trim() !== '')) {
      const r = JSON.parse(line) as { id: string; question: string; options: Record<string, string> };
      helm.set(r.id, helmPrompt(adapter, r.question, Object.values(r.options)));
    }
    const b = catalog.get('medxpert_qa_text');
    const ours = prompts(b, await boundInstances('medxpert_qa_text', join(PACKAGE, 'medxpert_qa_text.jsonl'), { columns: { answer: 'label' } }));
    expect(helm.size).toBe(3);
    expect(ours.size).toBe(helm.size);
    expect(compare(ours, helm)).toEqual({ matches: helm.size });
  });

  // ADAPT_CHAT: HELM's ChatAdapter sends Input.messages as they are; the run spec's instructions
  // ("You are a helpful assistant.") and prefixes are fields that adapter never reads.
  it('HealthBench: every conversation sent as the turns HealthBenchScenario puts in Input.messages (chat)', async () => {
    const rows = healthBenchRows();
    const ours = await boundInstances('health_bench', join(ROOT, 'tests/fixtures/health-bench/synthetic.jsonl'));
    expect(ours.map((i) => [i.key, i.messages])).toEqual(rows.map((r) => [r.prompt_id, r.prompt]));
    expect(rows.some((r) => r.prompt.length > 1)).toBe(true);
  });

  it("HealthBench Professional: every task's conversation.messages as the turns (HealthBenchProfessionalScenario, chat)", async () => {
    const rows = healthBenchRows();
    const file = join(tempDir('layout'), 'professional.jsonl');
    writeFileSync(file, rows.map((r) => JSON.stringify({ id: r.prompt_id, conversation: { messages: r.prompt }, rubric_items: r.rubrics })).join('\n') + '\n');
    const ours = await boundInstances('health_bench_professional', file);
    expect(ours.map((i) => [i.key, i.messages])).toEqual(rows.map((r) => [r.prompt_id, r.prompt]));
  });
});
