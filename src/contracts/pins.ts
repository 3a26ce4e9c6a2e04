/**
 * A run's pins: the hashes of what made its scores what they are. Two runs of one benchmark are
 * comparable when every pin is the same; the engine records them when a run is requested (RunSpec.pins),
 * the export carries them per result, and the leaderboard and the export refuse to put runs with
 * different pins side by side unless the caller says so, naming what differs.
 */

export interface RunPins {
  /** sha256 of the data read (the run's data revision), or "unknown" (shipped data unbound, or a run from before it was recorded). */
  dataset: string;
  /** sha256 of the benchmark definition (benchmark.json as loaded: its adapter, metrics, jury criteria...). */
  definition: string;
  /** sha256 of the prompt template. */
  template: string;
  /** sha256 of the scoring: the mode (corrected / helm) and each metric with its scorer version; "unknown" for a run from before it was recorded. */
  scorer: string;
  /** sha256 of the judge set (each judge's endpoint id, model and deployment, and the same-family policy); null: no jury. "unknown" for a run from before it was recorded. */
  judges: string | null;
}

export type PinKind = keyof RunPins;

export const PIN_KINDS: readonly PinKind[] = ['dataset', 'definition', 'template', 'scorer', 'judges'];

/** What each pin means, as a refusal or a note says it. */
export const PIN_MEANING: Record<PinKind, string> = {
  dataset: 'read different data',
  definition: 'ran different definitions of the benchmark',
  template: 'used different prompt templates',
  scorer: 'were scored by different scorer versions',
  judges: 'were judged by different judge sets',
};

/** The runs of one benchmark whose pins differ, and which pins. */
export interface PinDifference {
  benchmarkId: string;
  differs: PinKind[];
  runs: { runId: string; pins: RunPins }[];
}

/**
 * Benchmarks whose runs differ in any pin. "unknown" differs from nothing (a run from before pins were
 * recorded cannot be shown to differ), so only two known, different values make a difference.
 */
export function pinDifferences(runs: readonly { runId: string; benchmarkId: string; pins: RunPins }[]): PinDifference[] {
  const byBenchmark = new Map<string, { runId: string; pins: RunPins }[]>();
  for (const r of runs) byBenchmark.set(r.benchmarkId, [...(byBenchmark.get(r.benchmarkId) ?? []), { runId: r.runId, pins: r.pins }]);
  const out: PinDifference[] = [];
  for (const [benchmarkId, list] of byBenchmark) {
    const differs = PIN_KINDS.filter((kind) => new Set(list.map((r) => r.pins[kind] ?? 'none').filter((v) => v !== 'unknown')).size > 1);
    if (differs.length > 0) out.push({ benchmarkId, differs, runs: list });
  }
  return out;
}

/** One benchmark's difference in words, hashes shortened to 12: "b: run R1 template 3f2a.., run R2 template 9c01..; ...". */
export function pinDifferenceLine(d: PinDifference): string {
  const short = (v: string | null) => (v === null ? 'none' : v === 'unknown' ? 'unknown' : v.slice(0, 12));
  const kinds = d.differs.map((k) => `${k} (${d.runs.map((r) => `run ${r.runId} ${short(r.pins[k])}`).join(', ')})`);
  return `${d.benchmarkId}: runs that ${d.differs.map((k) => PIN_MEANING[k]).join(' and ')}: ${kinds.join('; ')}`;
}
