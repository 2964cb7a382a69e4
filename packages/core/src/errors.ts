/** What went wrong, as a stable name a caller can switch on. */
export type SqlInboxErrorCode =
  | "Declaration"
  | "Identifier"
  | "Schema"
  | "ServerTooOld"
  | "UnsupportedForm"
  | "LeaseLost"
  | "BatchRolledBack"
  | "SessionLost"
  | "Closed"
  | "OutcomeUnknown"
  | "PoolTooSmall"
  | "AlreadySubscribed"
  | "NoRoute"
  | "Decode"
  | "Encode"
  | "Connect"
  | "ClockSkew"
  | "Handler"
  | "Timeout"
  | "Cancelled"
  | "JobEnded"
  | "WorkflowEnded";

/** Where an error happened: every message names what it can of these. */
export interface ErrorPlace {
  /** A publish's route, or a route's declaration: what the caller named. */
  readonly route?: string;
  /** A subscriber's subscription: what failed while it claimed, delivered or settled. */
  readonly subscription?: string;
  readonly table?: string;
  readonly column?: string;
  readonly id?: unknown;
}

/**
 * The one error class of sqlinbox. `code` says what kind of failure it is;
 * the message names the subscription, the table and, where there is one, the row.
 */
export class SqlInboxError extends Error {
  override readonly name = "SqlInboxError";
  readonly code: SqlInboxErrorCode;
  readonly place: ErrorPlace;

  constructor(code: SqlInboxErrorCode, message: string, place: ErrorPlace = {}, options?: { cause?: unknown }) {
    super(`${code}: ${message}${describePlace(place)}`, options);
    this.code = code;
    this.place = place;
  }
}

function describePlace(place: ErrorPlace): string {
  const parts: string[] = [];
  if (place.route !== undefined) parts.push(`route "${place.route}"`);
  if (place.subscription !== undefined) parts.push(`subscription "${place.subscription}"`);
  if (place.table !== undefined) parts.push(`table "${place.table}"`);
  if (place.column !== undefined) parts.push(`column "${place.column}"`);
  if (place.id !== undefined) parts.push(`id ${String(place.id)}`);
  return parts.length > 0 ? ` (${parts.join(", ")})` : "";
}

/** True when `error` is a sqlinbox error, optionally of the given code. */
export function isSqlInboxError(error: unknown, code?: SqlInboxErrorCode): error is SqlInboxError {
  return error instanceof SqlInboxError && (code === undefined || error.code === code);
}
