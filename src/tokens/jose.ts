// jose, loaded on first use: its modules add tens of milliseconds to every start, and only token operations need them.

type Jose = typeof import('jose');

let loading: Promise<Jose> | undefined;

/** The jose module; the first call starts loading it. */
export function jose(): Promise<Jose> {
  return (loading ??= import('jose'));
}
