// Rendering of stored microsecond times as the spec's `YYYY-MM-DD HH:MM:SS.ffffff+00:00`; imports nothing.

function pad(n: number, width: number): string {
  return String(n).padStart(width, '0');
}

/** The largest time the calendar arithmetic below renders (9999-12-31 23:59:59.999999); later ones take the Date way. */
const fastMicrosMax = 253_402_300_799_999_999;
const microsPerDay = 86_400_000_000;
/** "00" to "99". */
const twoDigits = Array.from({ length: 100 }, (_, n) => (n < 10 ? `0${n}` : String(n)));

/** "000" to "999": a time's fraction is two of them. */
const threeDigits = Array.from({ length: 1000 }, (_, n) => String(n).padStart(3, '0'));

/** "00-" to "99-" and the like: a time's two-digit fields with the separator after each, one piece apiece. */
const twoDigitsThen = (separator: string): string[] => twoDigits.map((d) => d + separator);
const twoDigitsDash = twoDigitsThen('-');
const twoDigitsSpace = twoDigitsThen(' ');
const twoDigitsColon = twoDigitsThen(':');
const twoDigitsDot = twoDigitsThen('.');
/** "000+00:00" to "999+00:00": the fraction's last three digits and the offset. */
const threeDigitsUtc = threeDigits.map((d) => `${d}+00:00`);

/** 0 means "no time" (the spec allows an empty created_at on the base Application). */
export function formatTimestamp(micros: number): string {
  const out: string[] = [];
  writeTimestamp(out, 0, micros);
  return out.join('');
}

/**
 * formatTimestamp(micros) as pieces written into out from index `at`, each taken from a table: a rendering that
 * joins its pieces once (src/http/render.ts) makes no string for its times. Answers where the pieces end; none for 0.
 */
export function writeTimestamp(out: string[], at: number, micros: number): number {
  if (micros === 0) return at;
  if (!Number.isSafeInteger(micros) || micros < 0 || micros > fastMicrosMax) {
    out[at] = formatByDate(micros);
    return at + 1;
  }
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
  const millis = Math.floor(fraction / 1000);
  let i = at;
  out[i++] = twoDigits[Math.floor(year / 100)]!;
  out[i++] = twoDigitsDash[year % 100]!;
  out[i++] = twoDigitsDash[month]!;
  out[i++] = twoDigitsSpace[day]!;
  out[i++] = twoDigitsColon[hours]!;
  out[i++] = twoDigitsColon[minutes]!;
  out[i++] = twoDigitsDot[seconds]!;
  out[i++] = threeDigits[millis]!;
  out[i++] = threeDigitsUtc[fraction - millis * 1000]!;
  return i;
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
