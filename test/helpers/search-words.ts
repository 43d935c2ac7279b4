// Made-up words for search tests: short syllables, accented and CJK ones among them, so terms of every length hit and miss.

const syllables = ['an', 'bo', 'ca', 'de', 'él', 'fu', 'gi', 'ho', 'ix', 'ju', 'ka', 'lö', 'mi', 'no', '日本', 'zz'];

/** `parts` syllables drawn with rand. */
export function word(rand: () => number, parts: number): string {
  let w = '';
  for (let i = 0; i < parts; i++) w += syllables[Math.floor(rand() * syllables.length)];
  return w;
}
