// What a well-formed entity id and API Key id look like, checked before any lookup; imports only limits.

import { apikeyIdChars, idCharsMax } from '../config/limits.js';

/** Path ids: letters and digits only, bounded; anything else is refused before any lookup. */
export function isWellFormedId(id: string): boolean {
  if (id.length === 0 || id.length > idCharsMax) return false;
  for (let i = 0; i < id.length; i++) {
    const c = id.charCodeAt(i);
    const ok = (c >= 48 && c <= 57) || (c >= 65 && c <= 90) || (c >= 97 && c <= 122);
    if (!ok) return false;
  }
  return true;
}

export function isApikeyId(id: string): boolean {
  if (id.length !== apikeyIdChars) return false;
  for (let i = 0; i < id.length; i++) {
    const c = id.charCodeAt(i);
    if (!((c >= 48 && c <= 57) || (c >= 65 && c <= 90))) return false;
  }
  return true;
}
