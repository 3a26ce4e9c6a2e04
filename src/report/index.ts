/**
 * `ehrbench report`: one self-contained HTML file for a committee that will not open the console,
 * with the console's pictures (src/pictures) inline. A run's report is built from the run as its
 * reader may see it (operations' RunView: the same operation and visibility rule as `runs show`); an
 * export's report from its released bundle alone, verified first.
 *
 *   runReportHtml(run: RunView, opts?: { writtenOn?: string; testEndpointNotice?: string }): string
 *   verifiedBundle(text: string, publicKey: KeyObject, exportId: string): Bundle   (UserError if it does not verify)
 *   exportReportHtml(bundle: Bundle): string
 *   writeReportFile(file: string, html: string, opts?: { force?: boolean }): void   (never a half-written file)
 *   modelCard(bundle: Bundle): Promise<string>   (CHAI Applied Model Card XML of a bundle's evidence packet,
 *     validated against schemas/chai-model-card/v0.2/schema.xsd; UserError if it has no packet or does not validate)
 */
export { runReportHtml, type RunReportOptions } from './run';
export { exportReportHtml, verifiedBundle } from './export';
export { writeReportFile, reportExists } from './write';
export { modelCard, modelCardXml, validateModelCard, COMMITTEE_PLACEHOLDER, MODEL_CARD_SCHEMA } from './model-card';
