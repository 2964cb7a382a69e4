export { SqlInboxError, isSqlInboxError, type SqlInboxErrorCode, type ErrorPlace } from "./errors.js";
export { validateIdentifier, MAX_IDENTIFIER_LENGTH } from "./identifier.js";
export type { SpecError, Require } from "./type-errors.js";
export type {
  Attempt, Lease, Payload, RetryAfter, ProcessedAt, Group, Fifo, Priority, AdvisoryLock,
  RoleMarker, RoleName, ColumnRole, HasRole, ClaimForm, FormOf, PayloadOf, TemplatePlaceholders,
} from "./roles.js";
export type { ColumnDescription, AdvisoryKey, AdvisoryKeyPart, InboxDescription } from "./description.js";
export { buildDescription, type DescriptionParts } from "./build-description.js";
export { column, type Column } from "./column.js";
export { InboxSpec, type AnyInboxSpec, type RolesOf, type RowOf } from "./spec.js";
export { field, type Field, type InboxDefinition, type CheckDefinition, type RolesOfDefinition, type SpecOfDefinition } from "./define.js";
export { defineInbox, type CheckAgainstDatabase } from "./define-inbox.js";
export { payloadOf, isStandardSchema, type PayloadType, type PayloadTypeMarker, type PayloadTypeOf, type StandardSchemaLike, type StandardResult } from "./payload-type.js";
