/**
 * Pictures: pure functions from typed data to a standalone SVG document (a string), for the console
 * (served as image/svg+xml) and the static report (`ehrbench report`). No file, network, DOM or clock:
 * everything a picture shows comes from its arguments. Every picture:
 *  - escapes every string of its input (xmlEscape, the one implementation; the leaderboard's heat map
 *    uses it too) and parses as XML;
 *  - has role="img", a <title> (its accessible name) and a <desc> (what it shows, in words);
 *  - uses presentation attributes only (fill, stroke, font-size, font-family): no style attribute, no
 *    <style> element, no script, no href, no web font, nothing outside the document (a strict
 *    Content-Security-Policy allows it);
 *  - writes text in colours of at least 4.5:1 on their ground (WCAG AA), and names every series in text;
 *  - says "No data: ..." (still a valid picture) when there is nothing to draw.
 *
 *   runProgressSvg(run: RunProgressInput): string
 *     a run's instances by state as one stacked bar, the status in words and every count; operations'
 *     RunView fits as it is (withheld figures: the rule, no number).
 *   categoryScoresSvg(models: CategoryModel[], opts?: { measure?: 'macroAverage' | 'meanWinRate'; title? }): string
 *     per-category scores of chosen models, a grouped bar chart; Leaderboard['models'] (src/export) fits.
 *   costWinRateSvg(points: CostPoint[], opts?: { title?; scale?: 'auto' | 'linear' | 'log' }): string
 *     cost (USD) against mean win rate, labelled points; an unknown cost is listed, not plotted at 0.
 *     costWinRatePoints(board.models, costPerModel(runViews)) builds the points.
 *   callsOverTimeSvg(data: CallBuckets, opts?: { title? }): string
 *     an endpoint's calls per time bucket by outcome; bucketCalls(records, { endpointId, from, to,
 *     bucketSeconds }) (or bucketCallsAsync for streamRecords) counts the audit trail's endpoint.call
 *     records; a range of more than MAX_BUCKETS buckets is a UserError (picture.range-invalid).
 */
export { xmlEscape, contrastRatio, inkOn, SERIES } from './svg';
export { runProgressSvg, PROGRESS_STATES, type RunProgressInput, type RunCounts } from './run-progress';
export { categoryScoresSvg, type CategoryModel, type CategoryScore, type CategoryMeasure, type CategoryScoresOptions } from './category-scores';
export { costWinRateSvg, costPerModel, costWinRatePoints, type CostPoint, type CostWinRateOptions, type RunCost } from './cost-win-rate';
export { callsOverTimeSvg, bucketCalls, bucketCallsAsync, CallBucketer, MAX_BUCKETS, type CallRecord, type CallBucket, type CallBuckets, type CallBucketOptions } from './calls-over-time';
