/** Plain-text tables and JSON for command output. Commands print data on stdout, progress on stderr. */
export interface Io {
  stdout: (text: string) => void;
  stderr: (text: string) => void;
  env: NodeJS.ProcessEnv;
}

/**
 * A reader that stops early (`ehrbench ... | head`) closes the pipe: that ends the command quietly, as
 * for any Unix tool, instead of a stack trace.
 */
function endOnClosedPipe(stream: NodeJS.WriteStream): void {
  stream.on('error', (err: NodeJS.ErrnoException) => {
    if (err.code === 'EPIPE') process.exit(process.exitCode ?? 0);
    throw err;
  });
}
endOnClosedPipe(process.stdout);

export const processIo: Io = {
  stdout: (t) => process.stdout.write(t),
  stderr: (t) => process.stderr.write(t),
  env: process.env,
};

export function formatTable(headers: string[], rows: (string | number | null | undefined)[][]): string {
  const cells = rows.map((r) => r.map((c) => (c === null || c === undefined ? '-' : String(c))));
  const widths = headers.map((h, i) => Math.max(h.length, ...cells.map((r) => (r[i] ?? '').length)));
  const line = (r: string[]) =>
    r
      .map((c, i) => c.padEnd(widths[i] ?? 0))
      .join('  ')
      .trimEnd();
  return [line(headers), line(widths.map((w) => '-'.repeat(w))), ...cells.map(line)].join('\n') + '\n';
}

export function formatScore(value: number | null | undefined): string {
  return value === null || value === undefined ? '-' : value.toFixed(3);
}

export function printJson(io: Io, value: unknown): void {
  io.stdout(JSON.stringify(value, null, 2) + '\n');
}
