// The package's public entry: the typed client, its error, access-token verification and the API's types.

export { AuthClient, AuthError } from './client.js';
export type { AuthErrorCode, ClientOptions, Credentials, Listing, RawResponse, SendOptions, UserListing, VerifyAccessTokenOptions } from './client.js';
export type * from './types.js';
