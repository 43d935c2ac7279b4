// The request bodies of every route, as schemas: one source for validation and for the OpenAPI document.

import {
  applicationsPerUserMax, descriptionCharsMax, groupsPerUserMax, ipAddressCharsMax, jwtSecretBytesMin, jwtSecretCharsMax, nameCharsMax,
  passwordBytesMax, passwordCharsMin, passwordHashCharsMax, tokenCharsMax,
} from '../config/limits.js';
import { invalidField } from '../domain/errors.js';
import {
  arrayOf, body, customData, email, enumOf, field, id, object, roles, status, string, tokenSettings, userStatus, type Schema,
} from '../domain/schema.js';

const name = string({ max: nameCharsMax });
const requiredName = string({ min: 1, max: nameCharsMax, trim: true });
const description = string({ max: descriptionCharsMax });

/** At least passwordCharsMin characters, at most passwordBytesMax bytes of UTF-8. Never echoed in a message. */
function password(): Schema<string> {
  const text = string({ min: passwordCharsMin, max: passwordBytesMax });
  return {
    parse(value, fieldName) {
      const s = text.parse(value, fieldName);
      if (Buffer.byteLength(s) > passwordBytesMax) throw invalidField(fieldName, `must be at most ${passwordBytesMax} bytes`);
      return s;
    },
    describe: () => ({ ...text.describe(), writeOnly: true }),
  };
}

/** An HS256 secret a caller chooses: at least jwtSecretBytesMin bytes, as RFC 7518 asks of an HS256 key. Never echoed in a message. */
function jwtSecret(): Schema<string> {
  const text = string({ min: jwtSecretBytesMin, max: jwtSecretCharsMax });
  return {
    parse: (value, fieldName) => text.parse(value, fieldName),
    describe: () => ({ ...text.describe(), writeOnly: true }),
  };
}

export const applicationCreate = body({
  name: field(requiredName, true),
  description: field(description),
  custom_data: field(customData({ nullable: true })),
  tokens: field(tokenSettings(false)),
  jwt_secret: field(jwtSecret()),
});

export const applicationUpdate = body({
  name: field(requiredName),
  description: field(description),
  custom_data: field(customData({ nullable: true })),
  status: field(status),
  tokens: field(tokenSettings(false)),
  jwt_secret: field(jwtSecret()),
});

export const tokenIntrospect = body({
  token: field(string({ min: 1, max: tokenCharsMax }), true),
});

export const groupCreate = body({
  name: field(requiredName, true),
  description: field(description),
  custom_data: field(customData({ nullable: false })),
  application: field(id(), true),
});

export const groupUpdate = body({
  name: field(requiredName),
  description: field(description),
  custom_data: field(customData({ nullable: false })),
  status: field(status),
});

export const organizationCreate = body({
  name: field(requiredName, true),
  description: field(description),
  custom_data: field(customData({ nullable: true })),
});

export const organizationUpdate = body({
  name: field(requiredName),
  description: field(description),
  custom_data: field(customData({ nullable: true })),
  status: field(status),
});

const memberships = {
  applications: field(arrayOf(id(), { max: applicationsPerUserMax, unique: true })),
  groups: field(arrayOf(id(), { max: groupsPerUserMax, unique: true })),
};

export const userCreate = body({
  email: field(email(), true),
  password: field(password()),
  /** An existing hash brought from another system (argon2id PHC or bcrypt), instead of `password`. */
  password_hash: field(string({ min: 1, max: passwordHashCharsMax })),
  name: field(name),
  custom_data: field(customData({ nullable: true })),
  organization: field(id()),
  ...memberships,
  /** Only an admin may give them (src/domain/roles.ts). */
  roles: field(roles()),
});

export const userUpdate = body({
  email: field(email()),
  password: field(password()),
  name: field(name),
  status: field(userStatus),
  custom_data: field(customData({ nullable: true })),
  organization: field(id()),
  ...memberships,
  /** Only an admin may give them (src/domain/roles.ts). */
  roles: field(roles()),
});

export const apikeyCreate = body({
  name: field(name),
  description: field(description),
  status: field(status),
  /** Narrows the owner's roles for callers using this key. */
  roles: field(roles()),
});

export const apikeyUpdate = apikeyCreate;

export const authenticate = body({
  type: field(enumOf(['username', 'apikey'] as const), true),
  // Any string: an unknown or malformed Application id fails authentication like every other mismatch.
  application: field(string({ min: 1, max: nameCharsMax }), true),
  credential: field(object({
    username: field(string({ max: passwordBytesMax }), true),
    password: field(string({ max: passwordBytesMax }), true),
  }), true),
  ip_address: field(string({ max: ipAddressCharsMax })),
});
