/**
 * The only door out of ehrbench: aggregate-only exports with disclosure control, released by a
 * compliance officer and signed; the MedHELM leaderboard maths lives in ./leaderboard.
 */
export { ExportService, type ExportFormat, type RequestOptions as ExportRequestOptions, type ExportServiceOptions } from './service';
export { verifyBundle, signBundle, BUNDLE_FILE, BUNDLE_SCHEMA, type VerifyReport } from './bundle';
export { COMMITTEE_FIELDS, intendedUseText, packetProblems, P_VALUE_DECIMALS, type CommitteeField } from './packet';
export { loadExportPublicKey, loadExportSigningKey, keyFingerprint, EXPORT_PUBLIC_KEY_FILE, EXPORT_SIGNING_KEY_FILE } from './keys';
export { writeExportFiles, writeDurably, type ExportFiles, type WriteFile } from './write';
export { rangeOf, releasedCount, suppressPartition, complement, subgroupCells, metricCell, wilson, rangeInterval, valueDenominator, type DisclosureSettings, type MetricStats } from './disclosure';
export { helmFilesFor, helmRunName, helmFileProblems } from './helm';
export type { ExportRow } from './store';
export type * from './types';
export { heatmapSvg } from './leaderboard/index';
export type { Leaderboard, ScoreTable } from './leaderboard/index';
export { leaderboardOf, unrankedModels } from './leaderboard/index';
export { toScoreTable } from './leaderboard/index';
export { dataRevisionReport, type DataRevisionReport, pinReport, revisionsLine, scoresFromRuns, versionReport, versionsLine } from './run-scores';
