// The user search index: one precomputed lowercase haystack per user, kept current by State.apply.

import type { User } from '../domain/entities.js';

/** Fields joined by a separator no search term can contain across (terms are matched within one field). */
const fieldSeparator = '\u0000';

export function companyNameOf(user: User): string | undefined {
  const company = user.customData?.['company_name'];
  return typeof company === 'string' ? company : undefined;
}

export function searchHaystack(user: User): string {
  const parts = [user.email, user.name, user.id];
  for (const key of user.apikeys) parts.push(key.id);
  const company = companyNameOf(user);
  if (company !== undefined) parts.push(company);
  return parts.join(fieldSeparator).toLowerCase();
}

export class UserSearchIndex {
  private readonly haystacks = new Map<string, string>();

  upsert(user: User): void {
    this.haystacks.set(user.id, searchHaystack(user));
  }

  remove(userId: string): void {
    this.haystacks.delete(userId);
  }

  clear(): void {
    this.haystacks.clear();
  }

  /** Ids of matching users in creation order, at most `limit`. The term must already be lowercase. */
  search(termLower: string, limit: number): string[] {
    const out: string[] = [];
    if (termLower.length === 0 || termLower.includes(fieldSeparator)) return out;
    for (const [id, haystack] of this.haystacks) {
      if (haystack.includes(termLower)) {
        out.push(id);
        if (out.length >= limit) break;
      }
    }
    return out;
  }
}
