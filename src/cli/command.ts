// What every authctl command shares: its declaration (options, help), argument parsing, output, and the exit codes.

import { parseArgs, type ParseArgsConfig } from 'node:util';

export const exitOk = 0;
export const exitFailure = 1;
export const exitUsage = 2;

/** Wrong arguments: printed with a pointer to --help, exit 2. */
export class UsageError extends Error {
  constructor(message: string) {
    super(message);
    this.name = 'UsageError';
  }
}

/** A failure with a message the operator can act on (no stack trace), exit 1. */
export class CommandError extends Error {
  constructor(message: string, options?: { cause?: unknown }) {
    super(message, options);
    this.name = 'CommandError';
  }
}

export type Options = NonNullable<ParseArgsConfig['options']>;
export type Values = Record<string, string | boolean | string[] | undefined>;

export interface Output {
  out(line: string): void;
  err(line: string): void;
}

export const processOutput: Output = {
  out: (line) => { process.stdout.write(`${line}\n`); },
  err: (line) => { process.stderr.write(`${line}\n`); },
};

export interface Command {
  /** As typed: `applications list`, `verify`. */
  readonly name: string;
  readonly summary: string;
  /** The synopsis and the option lines shown by --help. */
  readonly help: string;
  readonly options: Options;
  /** Positional arguments accepted (default none). */
  readonly positionalsMax?: number;
  run(values: Values, positionals: string[], io: Output): Promise<number>;
}

export function parse(command: Command, argv: string[]): { values: Values; positionals: string[]; help: boolean } {
  let parsed: { values: Values; positionals: string[] };
  try {
    parsed = parseArgs({
      args: argv, options: { ...command.options, help: { type: 'boolean', short: 'h' } }, strict: true, allowPositionals: true,
    }) as { values: Values; positionals: string[] };
  } catch (err) {
    throw new UsageError((err as Error).message);
  }
  if (parsed.values['help'] === true) return { ...parsed, help: true };
  if (parsed.positionals.length > (command.positionalsMax ?? 0)) {
    throw new UsageError(`unexpected argument ${parsed.positionals[command.positionalsMax ?? 0]!}`);
  }
  return { ...parsed, help: false };
}

export function stringOption(values: Values, name: string): string | undefined {
  const v = values[name];
  return typeof v === 'string' ? v : undefined;
}

export function requiredOption(values: Values, name: string): string {
  const v = stringOption(values, name);
  if (v === undefined || v.length === 0) throw new UsageError(`--${name} is required`);
  return v;
}

export function listOption(values: Values, name: string): string[] {
  const v = values[name];
  return Array.isArray(v) ? v : typeof v === 'string' ? [v] : [];
}

/** A JSON object given on the command line (--custom-data '{"tier":"gold"}'). */
export function jsonObjectOption(values: Values, name: string): Record<string, unknown> | undefined {
  const raw = stringOption(values, name);
  if (raw === undefined) return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(raw);
  } catch {
    throw new UsageError(`--${name} must be a JSON object, e.g. '{"tier":"gold"}'`);
  }
  if (typeof parsed !== 'object' || parsed === null || Array.isArray(parsed)) throw new UsageError(`--${name} must be a JSON object`);
  return parsed as Record<string, unknown>;
}

export function positiveIntOption(values: Values, name: string, fallback: number, max: number): number {
  const raw = stringOption(values, name);
  if (raw === undefined) return fallback;
  const n = /^[0-9]+$/.test(raw) ? Number(raw) : NaN;
  if (!(n >= 1 && n <= max)) throw new UsageError(`--${name} must be an integer from 1 to ${max}`);
  return n;
}

/** Everything on stdin, without one trailing newline (so `echo pass |` works). */
export async function readStdin(): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of process.stdin) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString('utf8').replace(/\r?\n$/, '');
}

/** Rows as aligned columns, for people; --json gives machines one JSON object per line. */
export function table(io: Output, header: readonly string[], rows: readonly (readonly string[])[]): void {
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((r) => (r[i] ?? '').length)));
  const line = (cells: readonly string[]): string => cells.map((c, i) => (i === cells.length - 1 ? c : c.padEnd(widths[i]!))).join('  ');
  io.out(line(header));
  for (const row of rows) io.out(line(row));
}
