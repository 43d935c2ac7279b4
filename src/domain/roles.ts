// Roles of base-Application Users and their API Keys, and what each lets a caller do; imports nothing.

export const roleNames = ['admin', 'manager', 'auditor', 'authenticator'] as const;
export type Role = (typeof roleNames)[number];

/**
 * What a route asks of its caller. `admin`: base-Application Users, roles and operator routes; `manage`:
 * every other change; `read`: every GET (never a secret) and /metrics; `authenticate`: POST /authenticate and
 * POST /tokens/introspect.
 */
export type Capability = 'admin' | 'manage' | 'read' | 'authenticate';

/** Capabilities as bits, so a caller's set is one number and a check one AND. */
const bit: Readonly<Record<Capability, number>> = { admin: 1, manage: 2, read: 4, authenticate: 8 };

const grants: Readonly<Record<Role, number>> = {
  admin: bit.admin | bit.manage | bit.read | bit.authenticate,
  manager: bit.manage | bit.read,
  auditor: bit.read,
  authenticator: bit.authenticate,
};

/** The narrowest role that grants a capability: what a refused caller is told it lacks. */
export const roleFor: Readonly<Record<Capability, Role>> = {
  admin: 'admin', manage: 'manager', read: 'auditor', authenticate: 'authenticator',
};

/** The roles that grant a capability, for the OpenAPI document. */
export function rolesGranting(capability: Capability): Role[] {
  return roleNames.filter((role) => (grants[role] & bit[capability]) !== 0);
}

/** A base User without `roles` is an admin, as every base User was before roles existed. */
export const defaultRoles: readonly Role[] = ['admin'];

/** What a User outside the base Application holds: it is no caller of this API, so nothing, and never admin by default. */
export const noRoles: readonly Role[] = [];

/** The roles a User holds: a base User's own (the default when it has none); none for any other User. */
export function rolesOfUser(isBaseUser: boolean, roles: readonly Role[] | undefined): readonly Role[] {
  return isBaseUser ? roles ?? defaultRoles : noRoles;
}

export function capabilitiesOf(roles: readonly Role[]): number {
  let caps = 0;
  for (const role of roles) caps |= grants[role];
  return caps;
}

/** A caller's capabilities: its User's roles (rolesOfUser), narrowed by its API Key's roles when it called with one that has them. */
export function callerCapabilities(userRoles: readonly Role[], keyRoles: readonly Role[] | undefined): number {
  const caps = capabilitiesOf(userRoles);
  return keyRoles === undefined ? caps : caps & capabilitiesOf(keyRoles);
}

export function hasCapability(caps: number, capability: Capability): boolean {
  return (caps & bit[capability]) !== 0;
}

/** Whether roles grant nothing that `within` does not: an API Key's roles must be within its owner's (rolesOfUser). */
export function rolesWithin(roles: readonly Role[], within: readonly Role[]): boolean {
  const caps = capabilitiesOf(roles);
  return (caps & capabilitiesOf(within)) === caps;
}

export function isAdminRoles(roles: readonly Role[]): boolean {
  return hasCapability(capabilitiesOf(roles), 'admin');
}
