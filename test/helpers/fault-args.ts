// Command-line options of the long runs (test/long/*.ts): `--name N` or `--name=N`, whole numbers only.

export function numberOption(name: string, fallback: number): number {
  const i = process.argv.indexOf(`--${name}`);
  const inline = process.argv.find((a) => a.startsWith(`--${name}=`));
  const raw = inline !== undefined ? inline.slice(name.length + 3) : i >= 0 ? process.argv[i + 1] : undefined;
  if (raw === undefined) return fallback;
  const n = Number(raw);
  if (!Number.isSafeInteger(n) || n < 0) throw new Error(`--${name} needs a whole number, got ${raw}`);
  return n;
}

export function stringOption(name: string): string | undefined {
  const i = process.argv.indexOf(`--${name}`);
  const inline = process.argv.find((a) => a.startsWith(`--${name}=`));
  return inline !== undefined ? inline.slice(name.length + 3) : i >= 0 ? process.argv[i + 1] : undefined;
}
