// Rendering of stored microsecond times as the spec's `YYYY-MM-DD HH:MM:SS.ffffff+00:00`; imports nothing.

function pad(n: number, width: number): string {
  return String(n).padStart(width, '0');
}

/** 0 means "no time" (the spec allows an empty created_at on the base Application). */
export function formatTimestamp(micros: number): string {
  if (micros === 0) return '';
  const ms = Math.floor(micros / 1000);
  const d = new Date(ms);
  return (
    `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1, 2)}-${pad(d.getUTCDate(), 2)} ` +
    `${pad(d.getUTCHours(), 2)}:${pad(d.getUTCMinutes(), 2)}:${pad(d.getUTCSeconds(), 2)}.` +
    `${pad(micros % 1_000_000, 6)}+00:00`
  );
}
