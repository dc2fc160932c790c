/**
 * Whom a check is for: the API key, counted in the classifier's queue share and the scope it may
 * remember what it read in (never shared between keys); a zero-data-retention request leaves
 * nothing behind.
 */
export interface Requester {
  keyId: string;
  zdr: boolean;
}
