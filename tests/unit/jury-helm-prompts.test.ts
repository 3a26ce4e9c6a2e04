/**
 * The judge prompts are HELM's, byte for byte: each of the 13 MedHELM jury annotators'
 * PROMPT_TEMPLATE (read as Python reads its string literal) is the benchmark's jury.txt, and its
 * ANNOTATION_CRITERIA keys are the benchmark's jury.criteria. The annotators are unchanged copies in
 * tests/fixtures/helm-annotators (Apache-2.0). Also: the prompt is filled as HELM's
 * _interpolate_prompt fills it (string.Template), and each {QUESTION} is HELM's instance.input.text.
 */
import { readdirSync, readFileSync } from 'node:fs';
import { join } from 'node:path';
import { Catalog, juryTemplatePlaceholders, juryTemplateProblem, renderTemplate, type Instance } from '../../src/catalog';
import { judgePrompt } from '../../src/annotate';
import { ROOT } from '../helpers/paths';

const FIXTURES = join(ROOT, 'tests', 'fixtures', 'helm-annotators');

/** The value of a Python triple-quoted (non-raw) string literal: its escapes decoded as Python does. */
function pythonString(body: string): string {
  const simple: Record<string, string> = { '\\': '\\', "'": "'", '"': '"', n: '\n', t: '\t', r: '\r', '\n': '' };
  return body.replace(/\\([\s\S])/g, (whole, c: string) => simple[c] ?? whole);
}

function promptTemplate(source: string, file: string): string {
  const m = /^PROMPT_TEMPLATE = """([\s\S]*?)"""$/m.exec(source);
  if (!m?.[1]) throw new Error(`${file}: no PROMPT_TEMPLATE`);
  return pythonString(m[1]);
}

/** ANNOTATION_CRITERIA: {"key": {"subkey", ...}, ...} as key -> sorted subkeys, in the file's order. */
function annotationCriteria(source: string, file: string): [string, string[]][] {
  const block = /^ANNOTATION_CRITERIA[^=]*= \{\n([\s\S]*?)\n\}$/m.exec(source)?.[1];
  if (!block) throw new Error(`${file}: no ANNOTATION_CRITERIA`);
  return block.split('\n').map((line) => {
    const m = /^\s*"([^"]+)": \{([^}]*)\},?$/.exec(line);
    if (!m) throw new Error(`${file}: unexpected ANNOTATION_CRITERIA line ${line}`);
    const subkeys = [...(m[2] as string).matchAll(/"([^"]+)"/g)].map((s) => s[1] as string);
    return [m[1] as string, subkeys.sort()];
  });
}

const annotators = readdirSync(FIXTURES)
  .filter((f) => f.endsWith('_annotator.py'))
  .map((f) => {
    const source = readFileSync(join(FIXTURES, f), 'utf8');
    return { file: f, id: /name="([a-z_]+)"/.exec(source)?.[1] as string, template: promptTemplate(source, f), criteria: annotationCriteria(source, f) };
  });

describe("the judge prompts are HELM's annotators' word for word", () => {
  const catalog = Catalog.load();

  it('has all 13 MedHELM jury annotators, each naming a shipped benchmark', () => {
    expect(annotators).toHaveLength(13);
    const jury = catalog.list().filter((b) => b.definition.jury);
    for (const a of annotators) expect(catalog.get(a.id).definition.jury).toBeDefined();
    // Every shipped jury benchmark has its annotator: no judge prompt is ehrbench's own.
    expect(jury.map((b) => b.definition.id).sort()).toEqual(annotators.map((a) => a.id).sort());
  });

  it.each(annotators.map((a) => [a.id, a] as const))('%s: jury.txt is PROMPT_TEMPLATE byte for byte', (id, a) => {
    const b = catalog.get(id);
    const shipped = readFileSync(join(b.dir, b.definition.jury?.promptFile as string));
    expect(shipped.equals(Buffer.from(a.template, 'utf8'))).toBe(true);
    expect(b.juryTemplate).toBe(a.template);
  });

  it.each(annotators.map((a) => [a.id, a] as const))("%s: jury.criteria are ANNOTATION_CRITERIA's keys, each with score and explanation", (id, a) => {
    expect(catalog.get(id).definition.jury?.criteria).toEqual(a.criteria.map(([k]) => k));
    for (const [, subkeys] of a.criteria) expect(subkeys).toEqual(['explanation', 'score']);
  });

  it('control: the extraction reads Python escapes, so a paraphrase or an unescaped \\" would be caught', () => {
    const aci = annotators.find((a) => a.id === 'aci_bench');
    expect(aci?.template).toContain('in terms of accruacy, completeness and clarity');
    expect(aci?.template).toContain('use escaped double quotes (") to\n  maintain');
    expect(aci?.template.startsWith('You are a medical expert')).toBe(true);
    expect(aci?.template.endsWith('Do not include any additional information in the output.\n')).toBe(true);
  });
});

describe("filling a judge prompt as HELM's _interpolate_prompt does", () => {
  const fill = (t: string) => judgePrompt(t, 'Q$1 {RESPONSE} $$', 'R ${QUESTION} $RESPONSE', 'G');

  it('fills HELM\'s {QUESTION}, {RESPONSE}, {GOLD_RESPONSE}, and never re-reads a value (a "$" or placeholder in the text stays)', () => {
    expect(fill('<q>{QUESTION}</q><r>{RESPONSE}</r><g>{GOLD_RESPONSE}</g>')).toBe('<q>Q$1 {RESPONSE} $$</q><r>R ${QUESTION} $RESPONSE</r><g>G</g>');
  });

  it("reads ehrbench's {{QUESTION}} (what benchmarks import-helm writes for HELM's {QUESTION}) as HELM reads the original", () => {
    expect(fill('<q>{{QUESTION}}</q><r>{{RESPONSE}}</r>')).toBe(fill('<q>{QUESTION}</q><r>{RESPONSE}</r>'));
    // A HELM file holding {{QUESTION}} keeps one pair of braces in HELM; import-helm writes it as {{{QUESTION}}}.
    expect(fill('{{{QUESTION}}}')).toBe('{Q$1 {RESPONSE} $$}');
  });

  it("applies string.Template's rules to the template's own $: $$ is a dollar, $QUESTION a placeholder", () => {
    // ${GOLD_RESPONSE} is first rewritten to $$GOLD_RESPONSE, as HELM rewrites it: the text "$GOLD_RESPONSE" stays.
    expect(fill('costs $$5; $QUESTION; ${GOLD_RESPONSE}x')).toBe('costs $5; Q$1 {RESPONSE} $$; $GOLD_RESPONSEx');
  });

  it('refuses, at load, a template HELM could not fill: a lone $, an unknown name, a placeholder run into a word', () => {
    expect(juryTemplateProblem('costs $5 {RESPONSE}')).toMatch(/"\$" at line 1 is not a placeholder/);
    expect(juryTemplateProblem('{RESPONSE} $dollars')).toMatch(/"\$dollars" at line 1 names no value/);
    // HELM turns {QUESTION}s into $QUESTIONs: a KeyError on "QUESTIONs".
    expect(juryTemplateProblem('{RESPONSE}\n{QUESTION}s')).toMatch(/"\$QUESTIONs" at line 2/);
    expect(juryTemplateProblem('costs $$5 {RESPONSE} {{QUESTION}}')).toBeUndefined();
    expect([...juryTemplatePlaceholders('{{RESPONSE}} $GOLD_RESPONSE ${QUESTION}')].sort()).toEqual(['GOLD_RESPONSE', 'RESPONSE']);
  });

  it('every shipped judge prompt can be filled and uses {RESPONSE}', () => {
    for (const a of annotators) {
      expect(juryTemplateProblem(a.template)).toBeUndefined();
      expect(juryTemplatePlaceholders(a.template).has('RESPONSE')).toBe(true);
    }
  });
});

/**
 * HELM's instance.input.text per scenario (stanford-crfm/helm 63754d05, src/helm/benchmark/scenarios),
 * rebuilt here from the scenario code over marker values, against each definition's jury.question.
 */
describe("{QUESTION} is HELM's instance.input.text", () => {
  const catalog = Catalog.load();
  const v = (name: string) => `<${name}>`;
  const question = (id: string, vars: string[]) => {
    const b = catalog.get(id);
    const instance: Instance = { key: 'k', vars: Object.fromEntries(vars.map((n) => [n, v(n)])), references: [] };
    return renderTemplate(b.definition.jury?.question ?? '(none)', instance, id);
  };

  it.each([
    ['aci_bench', ['conversation'], 'Doctor-patient dialogue:\n\n<conversation>'],
    ['med_dialog', ['dialogue'], '<dialogue>'],
    ['medi_qa', ['question'], '<question>'],
    ['medication_qa', ['question'], '<question>'],
    ['mimic_bhc', ['input'], '<input>'],
    ['mimic_rrs', ['findings'], '<findings>'],
    ['mtsamples_procedures', ['notes'], '<notes>'],
    ['mtsamples_replicate', ['report'], '<report>'],
    // PassageQuestionInput(passage="", question=...): "" + "\n" + "Question: " + question
    [
      'mental_health',
      ['topic', 'dialogue_type', 'context'],
      '\nQuestion: Topic: <topic>\nType: <dialogue_type>\n\nPrevious conversation:\n<context>\n\nGenerate an empathetic and appropriate counselor response:',
    ],
    ['medalign', ['ehr', 'instruction'], '\nQuestion: Instruction: Answer the following question based on the EHR:\n\nEHR: <ehr>\n\nQuestion: <instruction>\n\nAnswer:'],
    ['starr_patient_instructions', ['diagnosis', 'procedure', 'hp_note', 'op_note'], 'Diagnosis: <diagnosis>\nProcedure: <procedure>\nHistory & Physical: <hp_note>\nOperative Report: <op_note>\n\n'],
    [
      'dischargeme',
      ['target_name', 'discharge_text', 'radiology_report'],
      'Generate the <target_name> from the following patient discharge text and radiology report text.    \n\nDischarge Text:\n<discharge_text>\n\nRadiology Report:\n<radiology_report>\n\n<target_name>:\n',
    ],
  ])('%s', (id, vars, helmInputText) => {
    expect(question(id, vars)).toBe(helmInputText);
  });

  it("chw_care_plan: CHWCarePlanScenario's extraction prompt around the note, newlines included, without the run spec's instruction", () => {
    const q = question('chw_care_plan', ['note']);
    expect(q.startsWith('\nYou are provided with a clinical note regarding a physician-patient interaction. Your task is to extract')).toBe(true);
    expect(q.endsWith('Do not introduce external knowledge or assumptions.\n\nClinical Note:\n<note>\n')).toBe(true);
    // The model's prompt is the instruction and then the same text.
    expect(catalog.get('chw_care_plan').template).toContain(q.trim().replace('<note>', '{{note}}'));
  });
});
