/**
 * What `@sqlinbox/kysely-dialects`, `@sqlinbox/runtime` and their tests need of core.
 * NOT covered by semver: names here may change or go in any release. Applications import
 * from `@sqlinbox/core`.
 */
export * from "./index.js";
export { validateIdentifier, MAX_IDENTIFIER_LENGTH } from "./identifier.js";
export type { ErrorPlace } from "./errors.js";
export type { SpecError, Require } from "./type-errors.js";
export type {
  RoleMarker,
  RoleName,
  ColumnRole,
  HasRole,
  ClaimForm,
  FormOf,
  IsRowLockForm,
  IsAdvisoryForm,
  FormLabel,
  HasLeaseColumn,
  PayloadOf,
  ResultOf,
  ProgressOf,
  RoleColumnValue,
  RowValue,
  TemplatePlaceholders,
  TypedRole,
} from "./roles.js";
export type { ColumnDescription, AdvisoryKey, AdvisoryKeyPart, InboxDescription } from "./description.js";
export { buildDescription, type DescriptionParts } from "./build-description.js";
export { FORM_FACTS, type FormFacts } from "./form-facts.js";
export type { Column } from "./column.js";
export type { AnyInboxSpec } from "./spec.js";
export type { Field, InboxDefinition, CheckDefinition, DefinitionErrorAt, RolesOfDefinition, RowOfDefinition, DataOfDefinition, SpecOfDefinition } from "./define.js";
export type { CheckAgainstDatabase } from "./define-inbox.js";
export { isStandardSchema, type PayloadType, type PayloadTypeMarker, type PayloadTypeOf, type StandardSchemaLike, type StandardResult } from "./payload-type.js";
export type { StepDescription } from "./workflow.js";
