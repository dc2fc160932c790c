/** Who is calling: resolved from the API key by auth, then carried by the request's context. */
export interface Caller {
  /** The key's id (`key_…`), or `env` for the key given by `SERVICE_API_KEY`. */
  keyId: string;
  name: string;
  /** Requests per minute; null: no limit of its own. */
  rpm: number | null;
  /** Tokens per minute; null: no limit of its own. */
  tpm: number | null;
}

/** Finds the caller a presented API key belongs to; undefined for a missing, unknown or revoked key. */
export interface CallerResolver {
  resolve(key: string): Promise<Caller | undefined>;
}
