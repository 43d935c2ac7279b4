// Rendering of stored microsecond times as the spec's `YYYY-MM-DD HH:MM:SS.ffffff+00:00`; imports nothing.

function pad(n: number, width: number): string {
  return String(n).padStart(width, '0');
}

/** The largest time the calendar arithmetic below renders (9999-12-31 23:59:59.999999); later ones take the Date way. */
const fastMicrosMax = 253_402_300_799_999_999;
const microsPerDay = 86_400_000_000;
/** "00" to "99". */
const twoDigits = Array.from({ length: 100 }, (_, n) => (n < 10 ? `0${n}` : String(n)));

/** 0 means "no time" (the spec allows an empty created_at on the base Application). */
export function formatTimestamp(micros: number): string {
  if (micros === 0) return '';
  if (!Number.isSafeInteger(micros) || micros < 0 || micros > fastMicrosMax) return formatByDate(micros);
  // Days since 1970-01-01 to a civil date (the proleptic Gregorian calendar, as Date uses), without a Date per call.
  const days = Math.floor(micros / microsPerDay);
  let rest = micros - days * microsPerDay;
  const z = days + 719_468;
  const era = Math.floor(z / 146_097);
  const dayOfEra = z - era * 146_097;
  const yearOfEra = Math.floor((dayOfEra - Math.floor(dayOfEra / 1460) + Math.floor(dayOfEra / 36_524) - Math.floor(dayOfEra / 146_096)) / 365);
  const dayOfYear = dayOfEra - (365 * yearOfEra + Math.floor(yearOfEra / 4) - Math.floor(yearOfEra / 100));
  const monthIndex = Math.floor((5 * dayOfYear + 2) / 153);
  const day = dayOfYear - Math.floor((153 * monthIndex + 2) / 5) + 1;
  const month = monthIndex < 10 ? monthIndex + 3 : monthIndex - 9;
  const year = yearOfEra + era * 400 + (month <= 2 ? 1 : 0);
  const hours = Math.floor(rest / 3_600_000_000);
  rest -= hours * 3_600_000_000;
  const minutes = Math.floor(rest / 60_000_000);
  rest -= minutes * 60_000_000;
  const seconds = Math.floor(rest / 1_000_000);
  const fraction = rest - seconds * 1_000_000;
  return `${pad(year, 4)}-${twoDigits[month]}-${twoDigits[day]} ${twoDigits[hours]}:${twoDigits[minutes]}:${twoDigits[seconds]}.${pad(fraction, 6)}+00:00`;
}

/** The same through Date, for times the arithmetic does not cover (negative, past year 9999, not whole). */
export function formatByDate(micros: number): string {
  if (micros === 0) return '';
  const ms = Math.floor(micros / 1000);
  const d = new Date(ms);
  return (
    `${pad(d.getUTCFullYear(), 4)}-${pad(d.getUTCMonth() + 1, 2)}-${pad(d.getUTCDate(), 2)} ` +
    `${pad(d.getUTCHours(), 2)}:${pad(d.getUTCMinutes(), 2)}:${pad(d.getUTCSeconds(), 2)}.` +
    `${pad(micros % 1_000_000, 6)}+00:00`
  );
}
