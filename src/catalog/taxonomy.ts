/**
 * MedHELM's taxonomy: 5 categories and 22 subcategories, with the exact names HELM uses (the
 * subcategories exist in HELM only as comments in its run-entries files; here they are data). The
 * MedHELM package (PyPI medhelm, the community continuation since HELM's maintenance mode) keeps the
 * five categories and their members and adds its benchmarks to Clinical Decision Support; it names no
 * subcategories, so each added benchmark has the subcategory of its closest HELM peer.
 */
export const TAXONOMY = {
  'Clinical Decision Support': ['Supporting Diagnostic Decisions', 'Planning Treatments', 'Predicting Patient Risks and Outcomes', 'Providing Clinical Knowledge Support'],
  'Clinical Note Generation': ['Documenting Patient Visits', 'Recording Procedures', 'Documenting Diagnostic Reports', 'Documenting Care Plans'],
  'Patient Communication and Education': [
    'Providing Patient Education Resources',
    'Delivering Personalized Care Instructions',
    'Patient-Provider Messaging',
    'Enhancing Patient Understanding and Accessibility in Health Communication',
    'Facilitating Patient Engagement and Support',
  ],
  'Medical Research Assistance': [
    'Conducting Literature Research',
    'Analyzing Clinical Research Data',
    'Recording Research Processes',
    'Ensuring Clinical Research Quality',
    'Managing Research Enrollment',
  ],
  'Administration and Workflow': ['Scheduling Resources and Staff', 'Overseeing Financial Activities', 'Organizing Workflow Processes', 'Care Coordination and Planning'],
} as const satisfies Record<string, readonly string[]>;

export type Category = keyof typeof TAXONOMY;

export const CATEGORIES = Object.keys(TAXONOMY) as Category[];

export function isSubcategoryOf(category: string, subcategory: string): boolean {
  const subs = (TAXONOMY as Record<string, readonly string[]>)[category];
  return subs !== undefined && subs.includes(subcategory);
}

/**
 * The catalog's built-in benchmarks by category, in the order of the MedHELM package's
 * schema_medhelm.yaml (run_groups medhelm_scenarios -> category -> benchmark): HELM's 37, then those
 * the package added that ship here. This is the one place that says how many benchmarks the catalog
 * holds and where each belongs: the catalog refuses a built-in benchmark filed elsewhere, and the tests
 * and counts read it.
 */
export const MEDHELM_BENCHMARKS: Readonly<Record<Category, readonly string[]>> = {
  'Clinical Decision Support': [
    'medcalc_bench',
    'clear',
    'mtsamples_replicate',
    'medec',
    'ehrshot',
    'head_qa',
    'medbullets',
    'med_qa',
    'med_mcqa',
    'medalign',
    'shc_ptbm_med',
    'shc_sei_med',
    // Added by the MedHELM package, in its order (sct_bench and health_bench_professional: Supporting
    // Diagnostic Decisions; health_bench and medxpert_qa_text: Providing Clinical Knowledge Support).
    'sct_bench',
    'health_bench',
    'health_bench_professional',
    'medxpert_qa_text',
  ],
  'Clinical Note Generation': ['dischargeme', 'aci_bench', 'mtsamples_procedures', 'mimic_rrs', 'mimic_bhc', 'chw_care_plan'],
  'Patient Communication and Education': ['medication_qa', 'starr_patient_instructions', 'med_dialog', 'shc_conf_med', 'medi_qa', 'mental_health', 'shc_proxy_med', 'shc_privacy_med'],
  'Medical Research Assistance': ['pubmed_qa', 'ehr_sql', 'shc_bmt_med', 'race_based_med', 'n2c2_ct_matching', 'medhallu'],
  'Administration and Workflow': ['shc_gip_med', 'mimiciv_billing_code', 'shc_sequoia_med', 'shc_cdi_med', 'shc_ent_med'],
};

/** How many benchmarks the built-in catalog holds. */
export const MEDHELM_BENCHMARK_COUNT = Object.values(MEDHELM_BENCHMARKS).flat().length;

/** The category the MedHELM package files a benchmark under, or undefined for one it does not list. */
export function medhelmCategoryOf(id: string): Category | undefined {
  return CATEGORIES.find((c) => MEDHELM_BENCHMARKS[c].includes(id));
}
