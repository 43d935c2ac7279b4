// Text that is its own JSON string body: what the renderer and the audit trail put between quotes without JSON.stringify.

const plainText = /^[\x20\x21\x23-\x5b\x5d-\x7e]*$/;

/** Printable ASCII but the quote and the backslash (ids, codes, statuses, addresses, most names): JSON writes it as it is. */
export function isPlainJsonText(s: string): boolean {
  return plainText.test(s);
}
