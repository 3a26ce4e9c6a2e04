/**
 * MedHELM's taxonomy: 5 categories and 22 subcategories, with the exact names HELM uses (the
 * subcategories exist in HELM only as comments in its run-entries files; here they are data).
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
