// Where the suites point: any implementation of the contract, named by the environment.
export function target(urlVariable: string): { baseUrl: string; apiKey: string } {
  const baseUrl = process.env[urlVariable];
  if (!baseUrl) throw new Error(`${urlVariable} is not set: give the base URL (ending in /v1) to test`);
  return { baseUrl: baseUrl.replace(/\/$/, ''), apiKey: process.env.SERVICE_API_KEY ?? 'any-key' };
}
